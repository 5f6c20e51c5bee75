/// One provider's rate limits, bound to its ID and its instruments: per provider, caller and context for requests
/// that authenticated, and per provider and per peer address for failed authentications.
///
/// The failed-authentication limits never refuse a credential that is cheap to check: an API key is one SHA-256
/// and a table lookup, a session token already verified is a memo lookup, and either answers at once whether it
/// is good. They are *charged* when authentication fails (a failure past a limit is answered 429, not 401), and
/// *looked at* only before the one costly check, a session token's signature: it is shed (429, nothing charged)
/// when its peer has used up its allowance, or when the provider's allowance is used up and this peer is one of
/// those failing. So a flood of bad credentials, from one address or from many, costs no signature checks past
/// its allowance, and a caller with a good credential is never refused because of somebody else's failures.
struct ProviderLimiters: Sendable {
    let id: ProviderID
    /// The buckets: a reload hands them on while the limits are unchanged, so nobody's allowance resets.
    let buckets: RateLimitBuckets
    let metrics: ProviderMetrics

    /// Sheds a costly credential check (a session token's signature) for `peer`: refused when `peer` is over its
    /// failed-authentication limit, or when the provider is over its own and `peer` has failed recently. Without a
    /// per-peer limit nothing tells failing peers from others, so then only a request with no address is shed.
    func checkBeforeCostlyAuthentication(from peer: PeerAddress?) throws(TokenGateError) {
        if let peer { try check(buckets.failedAuthPerPeer?.peek(peer), scope: .failedAuthPerPeer) }
        let peerIsFailing = peer.map { buckets.failedAuthPerPeer?.isCharged($0) ?? false } ?? true
        if peerIsFailing { try check(buckets.failedAuth?.peek(id), scope: .failedAuth) }
    }

    /// Counts one failed authentication against the provider and `peer`, and returns what to answer: `error`, or a
    /// 429 when this failure went past a limit.
    func failedAuthentication(_ error: TokenGateError, from peer: PeerAddress?) -> TokenGateError {
        let atProvider = buckets.failedAuth?.acquire(id)
        let fromPeer = peer.flatMap { buckets.failedAuthPerPeer?.acquire($0) }
        do throws(TokenGateError) {
            try check(fromPeer, scope: .failedAuthPerPeer)
            try check(atProvider, scope: .failedAuth)
        } catch {
            return error
        }
        return error
    }

    /// Applies the provider, caller and context limits in that order; the first refusal wins.
    func check(caller: AuthenticatedCaller, context: TokenContext) throws(TokenGateError) {
        try check(buckets.provider?.acquire(id), scope: .provider)
        try check(buckets.caller?.acquire(caller), scope: .caller)
        try check(buckets.context?.acquire(context), scope: .context)
    }

    private func check(_ decision: RateLimitDecision?, scope: ProviderMetrics.RateLimitScope) throws(TokenGateError) {
        if let seconds = decision?.retryAfterSeconds {
            metrics.recordRateLimited(scope)
            throw TokenGateError(.rateLimited, "\(scope.rawValue) rate limit reached", retryAfterSeconds: seconds)
        }
    }
}

/// The token buckets of one provider's configured limits (nil where a limit is not set).
final class RateLimitBuckets: Sendable {
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
}
