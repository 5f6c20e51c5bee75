/// One provider's rate limiters: per provider, caller and context for requests that authenticated, and per provider
/// and per peer address for failed authentications.
///
/// The failed-authentication limits never refuse a credential that is cheap to check: an API key is one SHA-256
/// and a table lookup, a session token already verified is a memo lookup, and either answers at once whether it
/// is good. They are *charged* when authentication fails (a failure past a limit is answered 429, not 401), and
/// *looked at* only before the one costly check, a session token's signature: it is shed (429, nothing charged)
/// when its peer has used up its allowance, or when the provider's allowance is used up and this peer is one of
/// those failing. So a flood of bad credentials, from one address or from many, costs no signature checks past
/// its allowance, and a caller with a good credential is never refused because of somebody else's failures.
final class ProviderLimiters: Sendable {
    let provider: RateLimiter<ProviderID>?
    let caller: RateLimiter<AuthenticatedCaller>?
    let context: RateLimiter<TokenContext>?
    let failedAuth: RateLimiter<ProviderID>?
    let failedAuthPerPeer: RateLimiter<PeerAddress>?

    init(_ settings: RateLimitSettings, clock: TokenGateClock) {
        provider = settings.provider.map { RateLimiter(limit: $0, clock: clock) }
        caller = settings.caller.map { RateLimiter(limit: $0, clock: clock) }
        context = settings.context.map { RateLimiter(limit: $0, clock: clock) }
        failedAuth = settings.failedAuth.map { RateLimiter(limit: $0, clock: clock) }
        failedAuthPerPeer = settings.failedAuthPerPeer.map { RateLimiter(limit: $0, clock: clock) }
    }

    /// Sheds a costly credential check (a session token's signature) for `peer` at provider `id`: refused when
    /// `peer` is over its failed-authentication limit, or when the provider is over its own and `peer` has failed
    /// recently. Without a per-peer limit nothing tells failing peers from others, so then only a request with no
    /// address is shed.
    func checkBeforeCostlyAuthentication(at id: ProviderID, from peer: PeerAddress?, metrics: ProviderMetrics) throws(TokenGateError) {
        if let peer { try Self.check(failedAuthPerPeer?.peek(peer), scope: .failedAuthPerPeer, metrics) }
        let peerIsFailing = peer.map { failedAuthPerPeer?.isCharged($0) ?? false } ?? true
        if peerIsFailing { try Self.check(failedAuth?.peek(id), scope: .failedAuth, metrics) }
    }

    /// Counts one failed authentication against provider `id` and `peer`, and returns what to answer: `error`, or
    /// a 429 when this failure went past a limit.
    func failedAuthentication(
        _ error: TokenGateError, at id: ProviderID, from peer: PeerAddress?, metrics: ProviderMetrics
    ) -> TokenGateError {
        let atProvider = failedAuth?.acquire(id)
        let fromPeer = peer.flatMap { failedAuthPerPeer?.acquire($0) }
        do throws(TokenGateError) {
            try Self.check(fromPeer, scope: .failedAuthPerPeer, metrics)
            try Self.check(atProvider, scope: .failedAuth, metrics)
        } catch {
            return error
        }
        return error
    }

    /// Applies the provider, caller and context limits in that order; the first refusal wins.
    func check(provider id: ProviderID, caller: AuthenticatedCaller, context: TokenContext, metrics: ProviderMetrics) throws(TokenGateError) {
        try Self.check(provider?.acquire(id), scope: .provider, metrics)
        try Self.check(self.caller?.acquire(caller), scope: .caller, metrics)
        try Self.check(self.context?.acquire(context), scope: .context, metrics)
    }

    private static func check(
        _ decision: RateLimitDecision?, scope: ProviderMetrics.RateLimitScope, _ metrics: ProviderMetrics
    ) throws(TokenGateError) {
        if let seconds = decision?.retryAfterSeconds {
            metrics.recordRateLimited(scope)
            throw TokenGateError(.rateLimited, "\(scope.rawValue) rate limit reached", retryAfterSeconds: seconds)
        }
    }
}
