import JOSE
public import Logging
import Synchronization

/// The gateway's one job, without HTTP: turn a raw token request into a verified token or a coded error.
///
/// It serves the current ``GatewayGeneration``, read once per request, so a request finishes on the generation it
/// started on while ``install(_:)`` swaps in the next one.
///
/// Order matters and is cheap-first: provider, token type and context are validated before any credential is
/// looked at; the failed-authentication limits before a session token's signature check (and charged after any
/// failure); authentication and authorization before the rate limits; the rate limits before the cache; the backend and the OpenSSL verification only on a cache miss. A
/// cache hit does no signing and no signature check: the token was verified when it entered the cache.
/// ``cachedToken(for:)`` runs the same checks synchronously for a request the cache answers at once (the HTTP
/// face calls it on the event loop) and leaves everything else to ``token(for:)``.
public final class TokenService: Sendable {
    /// What requests are served from: a generation and its providers' response formats, swapped together.
    private struct Serving: Sendable {
        let generation: GatewayGeneration
        let formats: [ProviderID: any TokenResponseFormat]

        init(_ generation: GatewayGeneration, formatter: TokenResponseFormatter) {
            self.generation = generation
            self.formats = generation.providers.mapValues { formatter($0.settings) }
        }
    }

    private let current: Mutex<Serving>
    private let formatter: TokenResponseFormatter
    private let clock: TokenGateClock
    private let logger: Logger
    private let denials: DenialLog
    /// Where every token a backend issued is recorded.
    public let audit: AuditLog
    /// Contexts an operator ended: refused with `410 context_ended`. Outlives every generation.
    public let endedContexts: EndedContexts
    /// The store replicas share tokens, limits and ended contexts in (`sharedState:`), or nil for one process.
    public let sharedState: SharedState?

    /// Serves `generation`; `formatter` makes each provider's response format once per generation.
    public init(
        generation: GatewayGeneration, formatter: @escaping TokenResponseFormatter, audit: AuditLog? = nil,
        sharedState: SharedState? = nil, clock: TokenGateClock = .system, logger: Logger
    ) {
        self.sharedState = sharedState
        self.current = Mutex(Serving(generation, formatter: formatter))
        self.formatter = formatter
        self.audit = audit ?? .disabled(logger: logger)
        self.clock = clock
        self.logger = logger
        self.denials = DenialLog(clock: clock, logger: logger)
        self.endedContexts = EndedContexts(capacity: generation.configuration.endedContexts.maxEntries)
        generation.metrics.recordGeneration(generation.number)
    }

    /// The generation requests are served from now.
    public var generation: GatewayGeneration { current.withLock { $0.generation } }

    /// Swaps in `next`; requests already running finish on the generation they read.
    public func install(_ next: GatewayGeneration) {
        let serving = Serving(next, formatter: formatter)
        current.withLock { $0 = serving }
        next.metrics.recordGeneration(next.number)
    }

    /// Sets the gauges that are read rather than counted (cached tokens per provider); call before exporting.
    public func updateGauges() {
        for runtime in generation.providers.values { runtime.metrics.recordCacheEntries(runtime.cache.count) }
    }

    /// Logs the counts of denials that were not logged one by one (call it every few seconds).
    public func flushDenialLog() { denials.flush() }

    /// A verified token for `query`, or a `TokenGateError` with a stable code. Denials are logged in aggregate.
    public func token(for query: TokenQuery) async throws(TokenGateError) -> TokenGrant {
        let serving = current.withLock { $0 }
        do {
            return try await grant(query, in: serving)
        } catch {
            recordDenial(error, providerID: query.providerID, tokenType: query.tokenType, peer: query.peer, requestID: query.requestID)
            throw error
        }
    }

    /// Logs (in aggregate) and counts a token request refused with `error`, also when the HTTP face refused it
    /// before it became a query (an oversized URL, a bad query string, a browser origin not allowed).
    public func recordDenial(_ error: TokenGateError, providerID: String, tokenType: String, peer: PeerAddress?, requestID: String?) {
        let generation = self.generation
        // Only validated values, or escaped and truncated ones, reach the log and metrics: path segments are
        // attacker text.
        let runtime = ProviderID(providerID).flatMap { generation.providers[$0] }
        let type = TokenType(rawValue: tokenType)
        if let runtime {
            runtime.metrics.recordDenial(error.code, type: type)
        } else {
            generation.metrics.recordDenialWithoutProvider(error.code, type: type)
        }
        let sent = runtime?.id.rawValue ?? Sanitized.quote(providerID)
        denials.record(
            error, provider: runtime?.id, sent: sent, type: type?.rawValue ?? Sanitized.quote(tokenType), peer: peer, requestID: requestID)
    }

    /// What a request has established once every synchronous check before the tenant's own has passed.
    private struct Admission {
        let id: ProviderID
        let runtime: ProviderRuntime
        let format: any TokenResponseFormat
        let type: TokenType
        let context: TokenContext
        let caller: AuthenticatedCaller
    }

    /// Provider, token type, context, authentication, `allow`, ended contexts: the checks every request passes
    /// first, all synchronous, shared by ``token(for:)`` and ``cachedToken(for:)``.
    private func admit(_ query: TokenQuery, in serving: Serving) throws(TokenGateError) -> Admission {
        let generation = serving.generation
        guard let id = ProviderID(query.providerID), let runtime = generation.providers[id], let format = serving.formats[id] else {
            throw TokenGateError(.unknownProvider, "no provider with that ID")
        }
        guard let type = TokenType(rawValue: query.tokenType) else {
            throw TokenGateError(.unknownTokenType, "no such token type")
        }
        guard runtime.backend.tokenTypes.contains(type) else {
            throw TokenGateError(.unknownTokenType, "provider \(id) does not issue \(type) tokens")
        }
        let context: TokenContext
        do {
            context = try TokenContext.parse(type: type, parameters: query.parameters)
        } catch {
            throw TokenGateError(.invalidRequest, error.description)
        }
        let caller = try authenticate(query, at: runtime, in: generation)
        try runtime.authenticator.authorize(caller, for: context)
        if endedContexts.isEnded(context, provider: id, now: clock.wallSeconds()) {
            throw TokenGateError(.contextEnded, "\(context.tokenType) \(context) was ended by an operator")
        }
        return Admission(id: id, runtime: runtime, format: format, type: type, context: context, caller: caller)
    }

    private func grant(_ query: TokenQuery, in serving: Serving) async throws(TokenGateError) -> TokenGrant {
        let admission = try admit(query, in: serving)
        let (id, runtime, context, caller) = (admission.id, admission.runtime, admission.context, admission.caller)
        // The tenant's own check, only for a request every cheaper check let through; it fails closed.
        try await runtime.authorizer.check(caller, for: context, metrics: runtime.metrics)
        if let sharedState, let fallback = runtime.fallbackLimiters {
            try await runtime.limiters.check(
                provider: id, caller: caller, context: context, metrics: runtime.metrics, shared: sharedState, fallback: fallback)
        } else {
            try runtime.limiters.check(provider: id, caller: caller, context: context, metrics: runtime.metrics)
        }
        do {
            // The caller whose request starts a fetch (or a refresh-ahead) is the one the audit line names.
            let (requestID, peer) = (query.requestID, query.peer)
            let (token, outcome) = try await runtime.cache.value(for: context) { [self] in
                if let sharedState {
                    return try await sharedState.token(
                        for: TokenCacheKey(provider: id, context: context),
                        refreshBefore: Self.refreshBeforeSeconds(runtime.settings.cache),
                        adopt: { self.adopt($0, for: context, at: runtime) },
                        mint: { try await self.fetchVerified(context, from: runtime, for: caller, requestID: requestID, peer: peer) })
                }
                return try await self.fetchVerified(context, from: runtime, for: caller, requestID: requestID, peer: peer)
            }
            return served(token, outcome, to: admission)
        } catch let error as TokenGateError {
            throw error
        } catch is CancellationError {
            throw TokenGateError(.backendUnavailable, "the request was cancelled")
        } catch {
            throw TokenGateError(.backendError, "the backend failed: \(Swift.type(of: error))")
        }
    }

    private func served(_ token: DeliveredToken, _ outcome: TokenCacheOutcome, to admission: Admission) -> TokenGrant {
        admission.runtime.metrics.recordServed(admission.type, outcome)
        return TokenGrant(
            token: token, context: admission.context, provider: admission.runtime.settings, outcome: outcome, format: admission.format)
    }

    /// What ``cachedToken(for:)`` decided.
    public enum CachedAnswer: Sendable {
        /// The cached token, every check passed: answer with it.
        case granted(TokenGrant)
        /// A check refused the request (already counted and logged, and any limit charged): answer with the error.
        case refused(TokenGateError)
        /// Only ``token(for:)`` can answer: nothing was charged, counted or logged.
        case needsFullPath
    }

    /// ``token(for:)`` for a request a cached token can answer at once, synchronously (from an event loop).
    ///
    /// The same checks in the same code (the synchronous admission, the rate limits, the cache). It answers only
    /// what needs no waiting; a request that needs the tenant's authorizer, the shared store, a fetch or a
    /// refresh-ahead is `needsFullPath`, decided before anything is charged. The one difference in order: the
    /// cache is looked at before the rate limits are charged (the full path charges first), so that a request
    /// handed on is never charged twice; a refused request still never gets a token.
    public func cachedToken(for query: TokenQuery) -> CachedAnswer {
        guard sharedState == nil else { return .needsFullPath }
        let serving = current.withLock { $0 }
        do throws(TokenGateError) {
            let admission = try admit(query, in: serving)
            let runtime = admission.runtime
            guard !runtime.authorizer.asks(admission.caller), let cached = runtime.cache.servableValue(for: admission.context) else {
                return .needsFullPath
            }
            try runtime.limiters.check(provider: admission.id, caller: admission.caller, context: admission.context, metrics: runtime.metrics)
            return .granted(served(cached.value, cached.outcome, to: admission))
        } catch {
            recordDenial(error, providerID: query.providerID, tokenType: query.tokenType, peer: query.peer, requestID: query.requestID)
            return .refused(error)
        }
    }

    /// The caller behind the request. A credential that fails is charged to the failed-authentication limits
    /// (answered 429 past them); only a session token's signature check is shed early, for a peer that keeps
    /// failing. A good credential is never refused by somebody else's failures.
    private func authenticate(
        _ query: TokenQuery, at runtime: ProviderRuntime, in generation: GatewayGeneration
    ) throws(TokenGateError) -> AuthenticatedCaller {
        let (id, limiters, metrics, peer) = (runtime.id, runtime.limiters, runtime.metrics, query.peer)
        let credential: CallerCredential
        do {
            credential = try CallerCredential(authorization: query.authorization)
        } catch {
            throw limiters.failedAuthentication(error, at: id, from: peer, metrics: metrics)
        }
        var shed = false
        do throws(TokenGateError) {
            return try runtime.authenticator.authenticate(credential) { () throws(TokenGateError) in
                do throws(TokenGateError) {
                    try limiters.checkBeforeCostlyAuthentication(at: id, from: peer, metrics: metrics)
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
            if case .apiKey(let digest) = credential, generation.isAPIKey(digest, ownedElsewhereThan: id) {
                throw limiters.failedAuthentication(
                    TokenGateError(.forbidden, "the credential belongs to another provider"), at: id, from: peer, metrics: metrics)
            }
            throw limiters.failedAuthentication(error, at: id, from: peer, metrics: metrics)
        }
    }

    /// One backend call and the OpenSSL verification every token passes before it may be cached or handed out;
    /// a token that passes is recorded in the audit log.
    private func fetchVerified(
        _ context: TokenContext, from runtime: ProviderRuntime, for caller: AuthenticatedCaller, requestID: String?, peer: PeerAddress?
    ) async throws -> DeliveredToken {
        let settings = runtime.settings
        let started = ContinuousClock.now
        let issued: IssuedToken
        do {
            issued = try await runtime.backend.issue(TokenRequest(provider: settings.id, context: context))
            runtime.metrics.recordBackendCall(context.tokenType, duration: ContinuousClock.now - started)
        } catch {
            runtime.metrics.recordBackendCall(context.tokenType, duration: ContinuousClock.now - started)
            runtime.metrics.recordBackendFailure(context.tokenType, (error as? TokenGateError)?.code ?? .backendError)
            throw error
        }
        let now = clock.wallSeconds()
        var verifier: FleetEngineVerifier
        do {
            verifier = try runtime.verifier()
        } catch {
            // No key yet (a JWKS URL not fetched so far): ask for it now (rate-limited) rather than wait a period.
            guard await runtime.keys.refreshForUnknownKey(now: clock.monotonicNanoseconds()) else { throw error }
            verifier = try runtime.verifier()
        }
        var outcome = Result { () throws(TokenRejection) in try verifier.verify(issued.compact, for: context, now: now) }
        // Keys may have rotated: the shared key set refetches (rate-limited there) and the token is checked once more.
        if case .failure(let rejection) = outcome, rejection.reason == .unknownKid,
            await runtime.keys.refreshForUnknownKey(now: clock.monotonicNanoseconds())
        {
            verifier = try runtime.verifier()
            outcome = Result { () throws(TokenRejection) in try verifier.verify(issued.compact, for: context, now: now) }
        }
        if case .success(let verified) = outcome, let issuer = issued.issuer, verified.claims["iss"] != .string(issuer) {
            outcome = .failure(TokenRejection(.wrongIssuer, "iss is not \(issuer), the account that signs \(context.tokenType) tokens"))
        }
        switch outcome {
        case .success(let verified):
            let expiresAt = verified.expiresAt ?? now
            if let stated = issued.expiresAt, stated > expiresAt + settings.leeway || stated < expiresAt - settings.leeway {
                logger.warning(
                    "the backend's stated expiry disagrees with the token's exp; using exp",
                    metadata: ["provider": "\(settings.id)", "reason": "expiry_mismatch", "stated": "\(stated)", "exp": "\(expiresAt)"])
            }
            if verified.keyID == nil, runtime.metrics.recordKeylessToken(context.tokenType) {
                logger.notice(
                    "the backend's tokens name no kid; each is verified against the keys bound to the service account its iss names",
                    metadata: ["provider": "\(settings.id)", "kid": "\(verified.key.keyID ?? "none")"])
            }
            let token = DeliveredToken(
                compact: issued.compact, issuedAt: verified.issuedAt ?? now, expiresAt: expiresAt, sharingHeaderIn: runtime.tokenHeaders)
            audit.record(
                AuditRecord(
                    time: now, provider: settings.id, context: context, caller: caller, keyID: verified.keyID ?? verified.key.keyID,
                    issuedAt: token.issuedAt, expiresAt: expiresAt, fingerprint: TokenFingerprint.of(issued.compact),
                    requestID: requestID, peer: peer))
            return token
        case .failure(let rejection):
            runtime.metrics.recordRejected(context.tokenType, rejection.reason)
            throw TokenGateError(.backendInvalidToken, "the backend's token failed verification (\(rejection.reason)): \(rejection.message)")
        }
    }

    /// A token read from the shared store, checked exactly as a freshly minted one (Redis is not trusted), and
    /// usable only with more than the refresh window left. Not audited: the replica that minted it did that.
    private func adopt(_ compact: String, for context: TokenContext, at runtime: ProviderRuntime) -> SharedState.Adoption {
        let now = clock.wallSeconds()
        guard let verifier = try? runtime.verifier() else { return .rejected(.unknownKid) }
        let verified: VerifiedJWT
        do {
            verified = try verifier.verify(compact, for: context, now: now)
        } catch {
            return .rejected(error.reason)
        }
        let expiresAt = verified.expiresAt ?? now
        guard expiresAt - now >= Self.refreshBeforeSeconds(runtime.settings.cache) else { return .stale }
        return .usable(DeliveredToken(compact: compact, issuedAt: verified.issuedAt ?? now, expiresAt: expiresAt, sharingHeaderIn: runtime.tokenHeaders))
    }

    /// Seconds before expiry at which a cached token is refreshed (never less than the minimum it is served with).
    private static func refreshBeforeSeconds(_ policy: TokenCachePolicy) -> Int64 {
        max(TokenGateClock.secondsRoundingUp(policy.minRemaining), TokenGateClock.secondsRoundingUp(policy.refreshBefore))
    }

    /// Ends `key` for the configured time (`endedContexts.refuseFor`): new requests for it get `410 context_ended`,
    /// and its cached tokens are evicted. Returns until when it is refused and how many tokens were evicted.
    /// Tokens already handed out stay valid at Fleet Engine until they expire.
    ///
    /// With shared state, every replica is told (and the store's list records it for replicas that missed the
    /// message); the shared cache's copies are refused by every replica's ended list before they could be served.
    public func endContext(_ key: EndedContexts.Key, by admin: String) async -> (until: Int64, evicted: Int) {
        let now = clock.wallSeconds()
        let until = now + generation.configuration.endedContexts.refuseFor.components.seconds
        let evicted = applyEnd(key, until: until, now: now)
        if let sharedState {
            await sharedState.publish(EndedContextChange(key: key, until: until))
        }
        logger.notice(
            "context ended",
            metadata: [
                "provider": "\(key.provider)", "kind": "\(key.kind)", "id": "\(key.id)", "admin": "\(admin)", "until": "\(until)",
                "evicted": "\(evicted)",
            ])
        return (until, evicted)
    }

    /// Lifts an ended `key` (at every replica, with shared state); returns whether it was ended here.
    public func liftContext(_ key: EndedContexts.Key, by admin: String) async -> Bool {
        let lifted = endedContexts.lift(key, now: clock.wallSeconds())
        if let sharedState {
            await sharedState.publish(EndedContextChange(key: key, until: nil))
        }
        logger.notice(
            "ended context lifted",
            metadata: ["provider": "\(key.provider)", "kind": "\(key.kind)", "id": "\(key.id)", "admin": "\(admin)", "wasEnded": "\(lifted)"])
        return lifted
    }

    /// Ends `key` until `until` here and evicts its cached tokens; returns how many.
    @discardableResult
    func applyEnd(_ key: EndedContexts.Key, until: Int64, now: Int64) -> Int {
        endedContexts.end(key, until: until, now: now)
        // Ended first, evicted second: a request between the two is refused before it reaches the cache.
        return generation.providers[key.provider]?.cache.removeValues { context in
            guard let id = context.id, let kind = EndedContexts.Key.kind(of: context.tokenType) else {
                return false
            }
            return kind == key.kind && id == key.id
        } ?? 0
    }

    /// Applies what another replica published, without publishing it again.
    func apply(_ change: EndedContextChange) {
        let now = clock.wallSeconds()
        if let until = change.until {
            guard until > now, endedContexts.endedUntil(change.key, now: now) != until else { return }
            let evicted = applyEnd(change.key, until: until, now: now)
            logger.info(
                "context ended at another replica",
                metadata: ["provider": "\(change.key.provider)", "kind": "\(change.key.kind)", "id": "\(change.key.id)", "evicted": "\(evicted)"])
        } else if endedContexts.lift(change.key, now: now) {
            logger.info(
                "ended context lifted at another replica",
                metadata: ["provider": "\(change.key.provider)", "kind": "\(change.key.kind)", "id": "\(change.key.id)"])
        }
    }

    /// Waits until every refresh-ahead started so far has finished (tests, and a clean shutdown).
    public func waitForBackgroundRefreshes() async {
        for runtime in generation.providers.values { await runtime.cache.waitForRefreshes() }
    }

    /// The public keys that verify a provider's tokens, as a JWKS document.
    public func publicKeys(providerID: String) throws(TokenGateError) -> [UInt8] {
        guard let id = ProviderID(providerID), let runtime = generation.providers[id] else {
            throw TokenGateError(.unknownProvider, "no provider with that ID")
        }
        return try runtime.keys.publicJWKS()
    }
}
