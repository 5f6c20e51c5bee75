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
    /// Where what a `shadow` limit would have refused is logged.
    let refusalLog: RateLimitRefusalLog
    /// The `RateLimit-Policy` of every token answer: the enforced provider, caller and context limits.
    let policy: String?

    init(id: ProviderID, buckets: RateLimitBuckets, metrics: ProviderMetrics, refusalLog: RateLimitRefusalLog) {
        self.id = id
        self.buckets = buckets
        self.metrics = metrics
        self.refusalLog = refusalLog
        policy = RateLimitHeaders.policy([
            ("provider", buckets.provider?.limit), ("caller", buckets.caller?.limit), ("context", buckets.context?.limit),
        ])
    }

    /// Sheds a costly credential check (a session token's signature) for `peer`: refused when `peer` is over its
    /// failed-authentication limit, or when the provider is over its own and `peer` has failed recently. Without a
    /// per-peer limit nothing tells failing peers from others, so then only a request with no address is shed.
    func checkBeforeCostlyAuthentication(from peer: PeerAddress?) throws(TokenGateError) {
        if let peer, let limiter = buckets.failedAuthPerPeer { try check(limiter.peek(peer), limiter.limit, scope: .failedAuthPerPeer) }
        let peerIsFailing = peer.map { buckets.failedAuthPerPeer?.isCharged($0) ?? false } ?? true
        if peerIsFailing, let limiter = buckets.failedAuth { try check(limiter.peek(id), limiter.limit, scope: .failedAuth) }
    }

    /// Counts one failed authentication against the provider and `peer`, and returns what to answer: `error`, or a
    /// 429 when this failure went past a limit.
    func failedAuthentication(_ error: TokenGateError, from peer: PeerAddress?) -> TokenGateError {
        let atProvider = buckets.failedAuth?.acquire(id)
        let fromPeer = peer.flatMap { buckets.failedAuthPerPeer?.acquire($0) }
        do throws(TokenGateError) {
            if let fromPeer, let limit = buckets.failedAuthPerPeer?.limit { try check(fromPeer, limit, scope: .failedAuthPerPeer) }
            if let atProvider, let limit = buckets.failedAuth?.limit { try check(atProvider, limit, scope: .failedAuth) }
        } catch {
            return error
        }
        return error
    }

    /// Whether any limit applies to token requests (enforced or shadow): rates or distinct-contexts caps.
    var limitRequests: Bool {
        buckets.provider != nil || buckets.caller != nil || buckets.context != nil || buckets.distinctContexts != nil
    }

    /// Applies the provider, caller and context limits in that order, then the caller's distinct-contexts caps (so
    /// a context is counted only for a request every other limit let through); the first refusal wins. Returns what
    /// the answer says about the limits (nil without enforced limits).
    func check(caller: AuthenticatedCaller, context: TokenContext) throws(TokenGateError) -> RateLimitHeaders? {
        let headers = try checkRates(caller: caller, context: context)
        if let counter = buckets.distinctContexts { try check(counter.admit(context, for: caller), caller: caller) }
        return headers
    }

    /// The provider, caller and context limits alone.
    func checkRates(caller: AuthenticatedCaller, context: TokenContext) throws(TokenGateError) -> RateLimitHeaders? {
        var tightest: (name: String, quota: RateLimitQuota)?
        try charge(buckets.provider, id, scope: .provider, tightest: &tightest)
        try charge(buckets.caller, caller, scope: .caller, tightest: &tightest)
        try charge(buckets.context, context, scope: .context, tightest: &tightest)
        guard let policy else { return nil }
        return RateLimitHeaders(
            policy: policy,
            status: tightest.map { RateLimitHeaders.status($0.name, remaining: $0.quota.remaining, resetNanoseconds: $0.quota.resetNanoseconds) })
    }

    /// Charges `key` to `limiter`: a refusal throws (an enforced limit) or is only counted and logged (a shadow one).
    private func charge<Key>(
        _ limiter: RateLimiter<Key>?, _ key: Key, scope: ProviderMetrics.RateLimitScope, tightest: inout (name: String, quota: RateLimitQuota)?
    ) throws(TokenGateError) {
        guard let limiter else { return }
        let quota = limiter.acquireMeasured(key)
        do {
            try check(quota.decision, limiter.limit, scope: scope)
        } catch {
            throw error.withRateLimitHeaders(
                policy.map {
                    RateLimitHeaders(
                        policy: $0, status: RateLimitHeaders.status(scope.rawValue, remaining: 0, resetNanoseconds: quota.resetNanoseconds))
                })
        }
        guard !limiter.limit.shadow else { return }
        if tightest.map({ quota.remaining < $0.quota.remaining }) ?? true { tightest = (scope.rawValue, quota) }
    }

    /// Throws `rate_limited` (with `Retry-After`: the window's end) when `caller`'s distinct-contexts cap refused a
    /// new context; a shadow cap's refusal is counted and logged. Every refusal is logged in aggregate by caller.
    func check(_ decision: DistinctContextCounter.Decision, caller: AuthenticatedCaller) throws(TokenGateError) {
        guard case .refused(let scope, let seconds) = decision, let limits = buckets.distinctContexts?.limits else { return }
        let cap = scope == "all" ? limits.perCaller : TokenType(rawValue: scope).flatMap { limits.perType[$0] }
        if let cap { refusalLog.recordDistinctContexts(caller, scope: scope, cap: cap, shadow: limits.shadow) }
        if limits.shadow {
            metrics.recordShadowRefusal(.distinctContexts)
            return
        }
        metrics.recordRateLimited(.distinctContexts)
        throw TokenGateError(
            .rateLimited, "client \(caller.name) reached its cap of distinct \(scope == "all" ? "" : "\(scope) ")contexts",
            retryAfterSeconds: Int(clamping: max(1, seconds)))
    }

    /// Throws `rate_limited` for a refusal of an enforced limit; a shadow limit's refusal is counted and logged.
    func check(_ decision: RateLimitDecision, _ limit: RateLimit, scope: ProviderMetrics.RateLimitScope) throws(TokenGateError) {
        guard let seconds = decision.retryAfterSeconds else { return }
        if limit.shadow {
            metrics.recordShadowRefusal(scope)
            refusalLog.recordShadow(scope, limit: limit)
            return
        }
        metrics.recordRateLimited(scope)
        throw TokenGateError(.rateLimited, scope.refusalReason, retryAfterSeconds: seconds)
    }
}

/// The token buckets of one provider's configured limits (nil where a limit is not set).
final class RateLimitBuckets: Sendable {
    let provider: RateLimiter<ProviderID>?
    let caller: RateLimiter<AuthenticatedCaller>?
    let context: RateLimiter<TokenContext>?
    let failedAuth: RateLimiter<ProviderID>?
    let failedAuthPerPeer: RateLimiter<PeerAddress>?
    let distinctContexts: DistinctContextCounter?

    init(_ settings: RateLimitSettings, clock: TokenGateClock) {
        distinctContexts = settings.distinctContexts.map { DistinctContextCounter($0, clock: clock) }
        provider = settings.provider.map { RateLimiter(limit: $0, clock: clock) }
        caller = settings.caller.map { RateLimiter(limit: $0, clock: clock) }
        context = settings.context.map { RateLimiter(limit: $0, clock: clock) }
        failedAuth = settings.failedAuth.map { RateLimiter(limit: $0, clock: clock) }
        failedAuthPerPeer = settings.failedAuthPerPeer.map { RateLimiter(limit: $0, clock: clock) }
    }
}
