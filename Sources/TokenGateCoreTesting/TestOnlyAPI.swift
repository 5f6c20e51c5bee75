package import TokenGateCore

// Entry points only tests use, kept off the production types: each is a shorthand for what the gateway does
// through its own, longer path.

extension CallerAuthenticator {
    /// The caller behind `authorization`, a raw `Authorization` header value (nil when absent): the header parse
    /// and the check in one call, where the gateway reads the credential while admitting a request.
    package func authenticate(authorization: String?) throws(TokenGateError) -> AuthenticatedCaller {
        try authenticate(CallerCredential(authorization: authorization))
    }
}

extension TokenCache {
    /// Forgets the value for `key`; a fetch in flight for it still answers its waiters but is not cached.
    package func removeValue(for key: Key) { removeValues { $0 == key } }

    /// Forgets every value; fetches in flight still answer their waiters but are not cached.
    package func removeAll() { removeValues { _ in true } }
}

extension ProviderRuntime {
    /// The keys that verify this provider's tokens now; throws `backend_unavailable` while it has none.
    package func verificationKeys() throws(TokenGateError) -> VerificationKeys { try keys.current() }

    /// The number of cached tokens.
    package var cachedTokenCount: Int { cache.count }
}
