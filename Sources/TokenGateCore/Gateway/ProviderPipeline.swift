/// One provider's request path on one generation: admission, the grant (authorizer, limits, cache) and, on a miss,
/// the mint, its verification and its audit, all with the provider's own parts.
///
/// Built by ``TokenService`` for each provider when a generation is installed, over the runtime the assembler made
/// and the services that outlive generations. Order is cheap-first: token type and context are validated before
/// any credential is looked at; the failed-authentication limits before a session token's signature check (and
/// charged after any failure); authentication and authorization before the rate limits; the rate limits before
/// the cache; the backend and the OpenSSL verification only on a miss. A hit does no signing and no signature
/// check: the token was verified when it entered the cache.
final class ProviderPipeline: Sendable {
    let runtime: ProviderRuntime
    /// How the provider's answers are written.
    let format: any TokenBodyWriter
    let services: GatewayServices
    /// Which providers hold each api-key digest, to tell a known caller at the wrong tenant from a stranger.
    private let apiKeyOwners: [[UInt8]: [ProviderID]]

    init(_ runtime: ProviderRuntime, format: any TokenBodyWriter, services: GatewayServices, apiKeyOwners: [[UInt8]: [ProviderID]]) {
        self.runtime = runtime
        self.format = format
        self.services = services
        self.apiKeyOwners = apiKeyOwners
    }

    /// Token type, context, authentication, `allow`, ended contexts: the synchronous checks every request passes
    /// first, whichever door it came in by.
    func admit(_ query: TokenQuery) throws(TokenGateError) -> TokenAdmission {
        guard let type = TokenType(rawValue: query.tokenType) else {
            throw TokenGateError(.unknownTokenType, "no such token type")
        }
        guard runtime.backend.tokenTypes.contains(type) else {
            throw TokenGateError(.unknownTokenType, "provider \(runtime.id) does not issue \(type) tokens")
        }
        let context: TokenContext
        do {
            context = try TokenContext.parse(type: type, parameters: query.parameters)
        } catch {
            throw TokenGateError(error)
        }
        let caller = try authenticate(query)
        try runtime.authenticator.authorize(caller, for: context)
        if services.endedContexts.isEnded(context, provider: runtime.id, now: services.clock.wallSeconds()) {
            throw TokenGateError(.contextEnded, "\(context.tokenType) \(context) was ended by an operator")
        }
        return TokenAdmission(pipeline: self, query: query, type: type, context: context, caller: caller)
    }

    /// The cached token for `admission` when one can answer at once, the limits charged; nil when only
    /// ``grant(_:)`` can answer (the tenant's authorizer, limits kept in the shared store, a fetch or a
    /// refresh-ahead), decided before anything is charged. A local hit with a shared store and no limit asks the
    /// store nothing, so it is answered here too.
    ///
    /// The one difference in order from ``grant(_:)``: the cache is looked at before the limits are charged, so a
    /// request handed on is never charged twice; a refused request still never gets a token.
    func cachedGrant(_ admission: TokenAdmission) throws(TokenGateError) -> TokenGrant? {
        guard services.sharedState == nil || !runtime.limiters.limitRequests, !runtime.authorizer.asks(admission.caller),
            services.sharedState?.mustCheckStore(for: admission.context, of: runtime.id) != true,
            let cached = runtime.cache.servableValue(for: admission.context)
        else { return nil }
        let limits = try runtime.limiters.check(caller: admission.caller, context: admission.context)
        return served(cached.value, cached.outcome, to: admission, limits: limits)
    }

    /// ``grant(_:)`` without a task for a cached token whose only wait is the shared rate limits: the store is asked
    /// from this thread and `completion` is called once, with the grant or the refusal, when it answers. False when
    /// that cannot be (an authorizer, a distinct-contexts cap, nothing cached, a store that needs a task): nothing
    /// was charged, and ``grant(_:)`` is the way. As in ``cachedGrant(_:)``, the cache is looked at first.
    func cachedGrant(
        afterSharedLimits admission: TokenAdmission, completion: @escaping @Sendable (Result<TokenGrant, TokenGateError>) -> Void
    ) -> Bool {
        guard let sharedState = services.sharedState, let fallback = runtime.fallbackLimiters, !runtime.authorizer.asks(admission.caller),
            !sharedState.mustCheckStore(for: admission.context, of: runtime.id), let cached = runtime.cache.servableValue(for: admission.context)
        else { return false }
        return runtime.limiters.check(caller: admission.caller, context: admission.context, shared: sharedState, fallback: fallback) { limits in
            completion(limits.map { self.served(cached.value, cached.outcome, to: admission, limits: $0) })
        }
    }

    /// The token for `admission`: the tenant's authorizer, the limits (shared across replicas when configured), then
    /// the cache, which fetches and verifies on a miss.
    func grant(_ admission: TokenAdmission) async throws(TokenGateError) -> TokenGrant {
        let (context, caller, spans) = (admission.context, admission.caller, services.spans)
        // The tenant's own check, only for a request every cheaper check let through; it fails closed. A yes may bound
        // the token's `exp` (the trip's end): too close a bound is a context that has ended.
        var notAfter: Int64?
        if runtime.authorizer.asks(caller) {
            notAfter = try await spans.run(.authorize, provider: runtime.id, tokenType: admission.type) { _ throws(TokenGateError) in
                try await runtime.authorizer.check(caller, for: context)
            }
        }
        if let notAfter, notAfter - services.clock.wallSeconds() < max(1, TokenGateClock.secondsRoundingUp(runtime.settings.cache.minRemaining)) {
            throw TokenGateError(.contextEnded, "the authorizer of client \(caller.name) bounds \(context) at \(notAfter), too soon for a token")
        }
        let limits =
            if let sharedState = services.sharedState, let fallback = runtime.fallbackLimiters {
                try await runtime.limiters.check(caller: caller, context: context, shared: sharedState, fallback: fallback)
            } else {
                try runtime.limiters.check(caller: caller, context: context)
            }
        do {
            let (token, outcome) = try await spans.run(.cache, provider: runtime.id, tokenType: admission.type) { span in
                var found = try await cachedOrFetched(admission, notAfter: notAfter)
                // A bounded caller may have joined a fetch without its bound: the one after it carries the bound.
                if let notAfter, found.value.expiresAt > notAfter { found = try await cachedOrFetched(admission, notAfter: notAfter) }
                span.note(found.outcome)
                return found
            }
            if let notAfter, token.expiresAt > notAfter {
                throw TokenGateError(.backendInvalidToken, "the token for \(context) expires at \(token.expiresAt), after its bound \(notAfter)")
            }
            return served(token, outcome, to: admission, limits: limits)
        } catch let error as TokenGateError {
            throw error
        } catch is CancellationError {
            throw TokenGateError(.backendUnavailable, "the request was cancelled")
        } catch {
            throw TokenGateError(.backendError, "the backend failed: \(Swift.type(of: error))")
        }
    }

    /// The token for `admission` from the cache, or fetched (through the shared store when there is one) and
    /// verified, expiring no later than `notAfter` when given. With a shared store, a context whose end this replica
    /// is not being told of is fetched through the store, never answered from the cache; one the store says has
    /// ended is refused, and remembered here.
    private func cachedOrFetched(
        _ admission: TokenAdmission, notAfter: Int64?
    ) async throws -> (value: DeliveredToken, outcome: TokenCacheOutcome) {
        let context = admission.context
        guard let sharedState = services.sharedState else {
            return try await runtime.cache.value(for: context, notAfter: notAfter) { [self] in
                // The caller whose request starts a fetch (or a refresh-ahead) is the one the audit line names.
                try await fetchVerified(for: admission, notAfter: notAfter)
            }
        }
        let fetch: @Sendable () async throws -> DeliveredToken = { [self] in
            try await sharedState.token(
                for: TokenCacheKey(provider: runtime.id, context: context), refreshBefore: refreshBeforeSeconds,
                share: runtime.settings.cache.maxEntries,
                adopt: { self.adopt($0, for: context, notAfter: notAfter) },
                mint: { try await self.fetchVerified(for: admission, notAfter: notAfter) })
        }
        do {
            if sharedState.mustCheckStore(for: context, of: runtime.id) { return (try await fetch(), .miss) }
            return try await runtime.cache.value(for: context, notAfter: notAfter, fetch: fetch)
        } catch let ended as SharedState.EndedInStore {
            _ = try? services.endedContexts.end(
                ended.key, EndedContexts.Record(until: ended.until, origin: .operator), now: services.clock.wallSeconds())
            throw TokenGateError(.contextEnded, "\(context.tokenType) \(context) has ended (the shared store holds its end)")
        }
    }

    private func served(
        _ token: DeliveredToken, _ outcome: TokenCacheOutcome, to admission: TokenAdmission, limits: RateLimitHeaders?
    ) -> TokenGrant {
        runtime.metrics.recordServed(admission.type, outcome)
        return TokenGrant(
            token: token, context: admission.context, providerID: runtime.id, outcome: outcome, format: format, rateLimits: limits)
    }

    /// The caller behind `query`. A credential that fails is charged to the failed-authentication limits (answered
    /// 429 past them); only a session token's signature check is shed early, for a peer that keeps failing. A good
    /// credential is never refused by somebody else's failures.
    private func authenticate(_ query: TokenQuery) throws(TokenGateError) -> AuthenticatedCaller {
        let (limiters, peer) = (runtime.limiters, query.peer)
        let credential: CallerCredential
        do {
            credential = try CallerCredential(authorization: query.authorization)
        } catch {
            throw limiters.failedAuthentication(error, from: peer)
        }
        var shed = false
        do throws(TokenGateError) {
            return try runtime.authenticator.authenticate(credential) { () throws(TokenGateError) in
                do throws(TokenGateError) {
                    try limiters.checkBeforeCostlyAuthentication(from: peer)
                } catch {
                    shed = true
                    throw error
                }
            }
        } catch {
            // Shed before the check: nothing failed, nothing more is charged.
            if shed { throw error }
            // An api key of another tenant is a known caller in the wrong place: forbidden, not unknown. One lookup
            // of the digest already computed; a session token is never tried on another tenant's behalf.
            if case .apiKey(let digest) = credential, apiKeyOwners[digest]?.contains(where: { $0 != runtime.id }) == true {
                throw limiters.failedAuthentication(TokenGateError(.forbidden, "the credential belongs to another provider"), from: peer)
            }
            throw limiters.failedAuthentication(error, from: peer)
        }
    }
}
