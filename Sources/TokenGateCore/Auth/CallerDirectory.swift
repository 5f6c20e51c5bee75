/// Every provider's ``CallerAuthenticator``, so a credential that fails at one provider but belongs to another is
/// answered `forbidden` ("useless here") rather than `unauthenticated` ("unknown").
///
/// The other providers are consulted only on the failure path, so a good request costs nothing extra. A session
/// token is only verified by other providers whose jwt clients trust its issuer, and is remembered there if good.
///
/// ```swift
/// let callers = CallerDirectory(authenticators)
/// let caller = try callers.authenticate(authorization: header, at: providerID)   // 401 or 403 on failure
/// ```
public final class CallerDirectory: Sendable {
    /// The authenticators by provider.
    public let authenticators: [ProviderID: CallerAuthenticator]

    /// A directory over these authenticators.
    public init(_ authenticators: [ProviderID: CallerAuthenticator]) {
        self.authenticators = authenticators
    }

    /// A directory with one authenticator per provider of `configuration`.
    public convenience init(configuration: GatewayConfiguration, clock: TokenGateClock, sessionMemoLimit: Int = 100_000) {
        var authenticators: [ProviderID: CallerAuthenticator] = [:]
        for (id, settings) in configuration.providers {
            authenticators[id] = CallerAuthenticator(
                provider: id, clients: settings.clients, clock: clock, sessionMemoLimit: sessionMemoLimit)
        }
        self.init(authenticators)
    }

    /// The caller behind `authorization` at `provider`.
    ///
    /// Throws `unknown_provider` for a provider not in the directory, `forbidden` when the credential fails here
    /// but authenticates at another provider, and otherwise the provider's own `unauthenticated` error.
    public func authenticate(authorization: String?, at provider: ProviderID) throws(TokenGateError)
        -> AuthenticatedCaller
    {
        guard let authenticator = authenticators[provider] else {
            throw TokenGateError(.unknownProvider, "no provider \(provider)")
        }
        do {
            return try authenticator.authenticate(authorization: authorization)
        } catch where error.code == .unauthenticated {
            if let owner = owner(of: authorization, otherThan: provider) {
                throw TokenGateError(.forbidden, "this credential belongs to another provider (\(owner)), not \(provider)")
            }
            throw error
        }
    }

    /// The first provider other than `provider`, in ID order, at which `authorization` authenticates; nil if none.
    public func owner(of authorization: String?, otherThan provider: ProviderID) -> ProviderID? {
        // A header that is missing or malformed fails the same way everywhere: skip the loop.
        guard (try? BearerCredential.parse(authorization)) != nil else { return nil }
        for (id, authenticator) in authenticators.sorted(by: { $0.key < $1.key }) where id != provider {
            if (try? authenticator.authenticate(authorization: authorization)) != nil { return id }
        }
        return nil
    }

    /// Whether `authorization`, which failed at `provider`, authenticates at some other provider.
    public func isKnownElsewhere(_ authorization: String?, than provider: ProviderID) -> Bool {
        owner(of: authorization, otherThan: provider) != nil
    }
}
