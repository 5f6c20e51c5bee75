extension ProviderLimiters {
    /// The provider, caller and context limits across every replica: one atomic GCRA script in the store for all
    /// three, on the store's clock. While the store is unreachable, `fallback` (this replica's share of each
    /// limit) decides instead, and each such request is counted. A limit in `shadow` mode is measured here, at this
    /// replica's share, and never sent to the store: what it would refuse must not stop the script charging the
    /// enforced ones. The answer carries the policy; how much is left is the store's, so it is not stated.
    func check(
        caller: AuthenticatedCaller, context: TokenContext, shared: SharedState, fallback: ProviderLimiters
    ) async throws(TokenGateError) -> RateLimitHeaders? {
        let headers = try await checkRates(caller: caller, context: context, shared: shared, fallback: fallback)
        try await checkDistinctContexts(caller: caller, context: context, shared: shared, fallback: fallback)
        return headers
    }

    /// The caller's distinct-contexts caps across every replica: one set per cap and window in the store, checked
    /// and added to in one script. While the store is unreachable, this replica counts on its own, at the whole cap
    /// (a share would refuse a caller that keeps to one replica); a context counted twice costs nothing.
    private func checkDistinctContexts(
        caller: AuthenticatedCaller, context: TokenContext, shared: SharedState, fallback: ProviderLimiters
    ) async throws(TokenGateError) {
        guard let limits = buckets.distinctContexts?.limits else { return }
        let caps = limits.caps(for: context.tokenType)
        guard !caps.isEmpty else { return }
        let now = shared.clock.wallSeconds()
        let identity = "\(caller.name)\u{0}\(caller.kind.rawValue)\u{0}\(caller.subject ?? "")"
        let sets = caps.map { scope, cap in
            let window = cap.window(at: now)
            return SharedDistinctSet(
                key: shared.distinctContextsKey(provider: id, scope: scope, window: window.index, caller: identity), capacity: cap.count,
                lifetime: .seconds(window.secondsLeft + 60))
        }
        let member = shared.distinctContextsMember(context)
        guard let refused = await shared.attempt(.distinctContexts, { try await shared.store.admit(member, to: sets) }) else {
            if let counter = fallback.buckets.distinctContexts { try fallback.check(counter.admit(context, for: caller), caller: caller) }
            return
        }
        guard let index = refused, caps.indices.contains(index) else { return }
        try check(.refused(scope: caps[index].scope, retryAfterSeconds: caps[index].cap.window(at: now).secondsLeft), caller: caller)
    }

    /// The provider, caller and context limits across every replica (see ``check(caller:context:shared:fallback:)``).
    private func checkRates(
        caller: AuthenticatedCaller, context: TokenContext, shared: SharedState, fallback: ProviderLimiters
    ) async throws(TokenGateError) -> RateLimitHeaders? {
        try fallback.measureShadowLimits(caller: caller, context: context)
        let charge = sharedCharge(caller: caller, context: context, shared: shared)
        guard !charge.buckets.isEmpty else { return nil }
        let outcome = await shared.attempt(.rateLimit) { try await shared.store.acquire(charge.buckets) }
        return try verdict(outcome, of: charge, caller: caller, context: context, shared: shared, fallback: fallback)
    }

    /// ``check(caller:context:shared:fallback:)`` without a task, when the store can answer so from this thread
    /// and no distinct-contexts cap applies: `completion` is called once, with the same answer, on this thread
    /// when the store answers. False when it cannot (nothing was charged): use the other.
    func check(
        caller: AuthenticatedCaller, context: TokenContext, shared: SharedState, fallback: ProviderLimiters,
        completion: @escaping @Sendable (Result<RateLimitHeaders?, TokenGateError>) -> Void
    ) -> Bool {
        guard buckets.distinctContexts == nil, shared.store.acquiresWithoutTask else { return false }
        do throws(TokenGateError) {
            try fallback.measureShadowLimits(caller: caller, context: context)
        } catch {
            completion(.failure(error))
            return true
        }
        let charge = sharedCharge(caller: caller, context: context, shared: shared)
        guard !charge.buckets.isEmpty else {
            completion(.success(nil))
            return true
        }
        shared.attempt(.rateLimit, start: { shared.store.acquire(charge.buckets, completion: $0) }) { outcome in
            completion(
                Result { () throws(TokenGateError) in
                    try verdict(outcome, of: charge, caller: caller, context: context, shared: shared, fallback: fallback)
                })
        }
        return true
    }

    /// What a request charges in the store: a bucket per enforced limit, and the scope of each.
    private struct SharedCharge: Sendable {
        var scopes: [ProviderMetrics.RateLimitScope] = []
        var buckets: [SharedRateBucket] = []
    }

    private func sharedCharge(caller: AuthenticatedCaller, context: TokenContext, shared: SharedState) -> SharedCharge {
        var charge = SharedCharge()
        func add(_ scope: ProviderMetrics.RateLimitScope, _ limit: RateLimit?, identity: @autoclosure () -> String) {
            guard let limit, !limit.shadow else { return }
            charge.scopes.append(scope)
            charge.buckets.append(SharedRateBucket(key: shared.rateKey(provider: id, scope: scope.rawValue, identity: identity()), limit: limit))
        }
        add(.provider, buckets.provider?.limit, identity: id.rawValue)
        // The caller's identity as its Hashable conformance defines it: client, kind and session subject.
        add(.caller, buckets.caller?.limit, identity: "\(caller.name)\u{0}\(caller.kind.rawValue)\u{0}\(caller.subject ?? "")")
        add(.context, buckets.context?.limit, identity: "\(context.tokenType.rawValue)\u{0}\(context.identity)")
        return charge
    }

    /// The answer to `charge` given the store's `outcome`; nil (the store unreachable) is decided by `fallback`.
    private func verdict(
        _ outcome: SharedRateOutcome?, of charge: SharedCharge, caller: AuthenticatedCaller, context: TokenContext, shared: SharedState,
        fallback: ProviderLimiters
    ) throws(TokenGateError) -> RateLimitHeaders? {
        guard let outcome else {
            shared.metrics.recordLocalLimits(provider: id)
            _ = try fallback.checkRates(caller: caller, context: context)
            return policy.map { RateLimitHeaders(policy: $0, status: nil) }
        }
        if case .limited(let index, let retryAfter) = outcome, charge.scopes.indices.contains(index) {
            let scope = charge.scopes[index]
            metrics.recordRateLimited(scope)
            let seconds = RateLimitDecision.limited(retryAfter: retryAfter).retryAfterSeconds
            throw TokenGateError(.rateLimited, "\(scope.rawValue) rate limit reached (shared)", retryAfterSeconds: seconds)
                .withRateLimitHeaders(policy.map { RateLimitHeaders(policy: $0, status: "\"\(scope.rawValue)\";r=0;t=\(seconds ?? 1)") })
        }
        return policy.map { RateLimitHeaders(policy: $0, status: nil) }
    }

    /// Charges only the limits in `shadow` mode (what they would refuse is counted and logged, never refused).
    private func measureShadowLimits(caller: AuthenticatedCaller, context: TokenContext) throws(TokenGateError) {
        if let limiter = buckets.provider, limiter.limit.shadow { try check(limiter.acquire(id), limiter.limit, scope: .provider) }
        if let limiter = buckets.caller, limiter.limit.shadow { try check(limiter.acquire(caller), limiter.limit, scope: .caller) }
        if let limiter = buckets.context, limiter.limit.shadow { try check(limiter.acquire(context), limiter.limit, scope: .context) }
    }
}

extension RateLimitSettings {
    /// One replica's share of each limit shared across `replicas`: count and burst divided, at least 1. The
    /// failed-authentication limits are per replica already and stay as they are.
    func share(of replicas: Int) -> RateLimitSettings {
        guard replicas > 1 else { return self }
        func divided(_ limit: RateLimit?) -> RateLimit? {
            limit.map { RateLimit(count: max(1, $0.count / replicas), per: $0.period, burst: max(1, $0.burst / replicas), shadow: $0.shadow) }
        }
        var share = self
        share.provider = divided(provider)
        share.caller = divided(caller)
        share.context = divided(context)
        return share
    }
}
