import JOSE
public import Logging
import Synchronization
public import Tracing

/// The gateway without HTTP: turns a raw token request into a verified token or a coded error.
///
/// It holds the generation being served and each of its providers' ``ProviderPipeline``, swapped together by
/// ``install(_:)``; a request reads them once and finishes on them. It dispatches a request to its provider's
/// pipeline, logs and counts what is refused, and serves each provider's public keys. Two doors lead in:
/// ``cachedToken(for:)`` answers synchronously what a cached token can (the HTTP face calls it on the event
/// loop) and hands anything else on as its ``TokenAdmission``; ``token(for:)-(TokenQuery)`` does it all.
public final class TokenService: Sendable {
    /// What requests are served from: a generation and its providers' pipelines.
    private struct Serving: Sendable {
        let generation: GatewayGeneration
        let pipelines: [ProviderID: ProviderPipeline]

        init(_ generation: GatewayGeneration, formatter: TokenResponseFormatter, services: GatewayServices) {
            self.generation = generation
            self.pipelines = generation.providers.mapValues { runtime in
                ProviderPipeline(runtime, format: formatter(runtime.settings), services: services, apiKeyOwners: generation.apiKeyOwners)
            }
        }

        func admit(_ query: TokenQuery) throws(TokenGateError) -> TokenAdmission {
            guard let id = ProviderID(query.providerID), let pipeline = pipelines[id] else {
                throw TokenGateError(.unknownProvider, "no provider with that ID")
            }
            return try pipeline.admit(query)
        }
    }

    /// The one place the serving state is swapped and read; ``contexts`` reads the generation there too.
    private final class Slot: Sendable {
        private let state: Mutex<Serving>
        init(_ serving: Serving) { state = Mutex(serving) }
        var serving: Serving {
            get { state.withLock { $0 } }
            set { state.withLock { $0 = newValue } }
        }
    }

    private let current: Slot
    private let formatter: TokenResponseFormatter
    private let services: GatewayServices
    private let denials: DenialLog
    /// The gateway's time (the system's, or a test's).
    public var clock: TokenGateClock { services.clock }
    /// Where the service logs.
    var logger: Logger { services.logger }
    /// Where every token a backend issued is recorded.
    public var audit: AuditLog { services.audit }
    /// The store replicas share tokens, limits and ended contexts in (`sharedState:`), or nil for one process.
    public var sharedState: SharedState? { services.sharedState }
    /// Ends and lifts contexts (the admin API); outlives every generation.
    public let contexts: ContextLifecycle

    /// How long a mint whose token names an unknown `kid` waits for the early JWKS refetch it asks for.
    public static let defaultUnknownKeyWait = Duration.seconds(3)

    /// Serves `generation`; `formatter` makes each provider's response format once per generation. With a
    /// `tracer`, the full path records its steps as spans (children of the current span: the HTTP request's).
    public init(
        generation: GatewayGeneration, formatter: @escaping TokenResponseFormatter, audit: AuditLog? = nil,
        sharedState: SharedState? = nil, clock: TokenGateClock = .system, unknownKeyWait: Duration = defaultUnknownKeyWait,
        tracer: (any Tracer)? = nil, logger: Logger
    ) {
        let services = GatewayServices(
            clock: clock, logger: logger, audit: audit ?? .disabled(logger: logger),
            endedContexts: EndedContexts(capacity: generation.configuration.endedContexts.maxEntries), sharedState: sharedState,
            unknownKeyWait: unknownKeyWait, spans: RequestSpans(tracer: tracer))
        let current = Slot(Serving(generation, formatter: formatter, services: services))
        self.current = current
        self.services = services
        self.formatter = formatter
        self.denials = DenialLog(clock: clock, logger: logger)
        self.contexts = ContextLifecycle(
            endedContexts: services.endedContexts, sharedState: sharedState, clock: clock, logger: logger,
            generation: { current.serving.generation })
        generation.metrics.recordGeneration(generation.number)
        generation.metrics.recordTenantConfigurations(of: generation, previous: nil)
    }

    /// The tracer requests are traced with, or nil: with one, the HTTP face starts a server span for each
    /// request, and answers none from the event loop's fast path (which has no span to hang the steps on).
    public var tracer: (any Tracer)? { services.spans.tracer }

    /// The generation requests are served from now.
    public var generation: GatewayGeneration { current.serving.generation }

    /// Swaps in `next`; requests already running finish on the generation they read.
    public func install(_ next: GatewayGeneration) {
        let previous = current.serving.generation
        current.serving = Serving(next, formatter: formatter, services: services)
        next.metrics.recordGeneration(next.number)
        next.metrics.recordTenantConfigurations(of: next, previous: previous)
    }

    /// Sets the gauges that are read rather than counted (cached tokens per provider); call before exporting.
    public func updateGauges() {
        for runtime in generation.providers.values {
            runtime.metrics.recordCacheEntries(runtime.cache.count)
            runtime.keyHealth.updateGauges()
        }
    }

    /// Logs the counts of denials that were not logged one by one (call it every few seconds).
    public func flushDenialLog() { denials.flush() }

    /// A verified token for `query`, or a `TokenGateError` with a stable code. Denials are logged in aggregate.
    public func token(for query: TokenQuery) async throws(TokenGateError) -> TokenGrant {
        let serving = current.serving
        let admission: TokenAdmission
        do {
            admission = try services.spans.run(.authenticate, { () throws(TokenGateError) in try serving.admit(query) }) {
                ($0.pipeline.runtime.id, $0.type)
            }
        } catch {
            recordDenial(error, query, in: serving)
            throw error
        }
        return try await token(for: admission)
    }

    /// The rest of the full path for a request ``cachedToken(for:)`` admitted and handed on.
    public func token(for admission: TokenAdmission) async throws(TokenGateError) -> TokenGrant {
        do {
            return try await admission.pipeline.grant(admission)
        } catch {
            recordDenial(error, admission)
            throw error
        }
    }

    /// ``token(for:)-(TokenAdmission)`` without a task, for a cached token whose only wait is the limits shared
    /// in the store: `completion` is called once when the store answers, on the thread that asked (an event loop).
    /// False when only the full path can answer; nothing was charged then.
    public func token(
        afterSharedLimits admission: TokenAdmission, completion: @escaping @Sendable (Result<TokenGrant, TokenGateError>) -> Void
    ) -> Bool {
        admission.pipeline.cachedGrant(afterSharedLimits: admission) { result in
            if case .failure(let error) = result { self.recordDenial(error, admission) }
            completion(result)
        }
    }

    /// What ``cachedToken(for:)`` decided.
    public enum CachedAnswer: Sendable {
        /// The cached token, every check passed: answer with it.
        case granted(TokenGrant)
        /// A check refused the request (already counted and logged, and any limit charged): answer with the error.
        case refused(TokenGateError)
        /// Admitted, but only ``token(for:)-(TokenAdmission)`` can answer: no limit was charged, nothing counted.
        case needsFullPath(TokenAdmission)
    }

    /// ``token(for:)-(TokenQuery)`` for a request a cached token can answer at once, synchronously (from an event
    /// loop): the same admission, then ``ProviderPipeline/cachedGrant(_:)``.
    public func cachedToken(for query: TokenQuery) -> CachedAnswer {
        let serving = current.serving
        var admission: TokenAdmission?
        do throws(TokenGateError) {
            let admitted = try serving.admit(query)
            admission = admitted
            guard let grant = try admitted.pipeline.cachedGrant(admitted) else { return .needsFullPath(admitted) }
            return .granted(grant)
        } catch {
            if let admission { recordDenial(error, admission) } else { recordDenial(error, query, in: serving) }
            return .refused(error)
        }
    }

    /// Logs (in aggregate) and counts a token request refused with `error` before it became a query (an oversized
    /// URL, a bad query string, a browser origin not allowed), on the generation served now.
    public func recordDenial(_ error: TokenGateError, providerID: String, tokenType: String, peer: PeerAddress?, requestID: String?) {
        let query = TokenQuery(providerID: providerID, tokenType: tokenType, parameters: [:], authorization: nil, peer: peer, requestID: requestID)
        recordDenial(error, query, in: current.serving)
    }

    /// A refusal before admission, counted on the generation the request read. Only validated values, or escaped
    /// and truncated ones, reach the log and metrics: path segments are attacker text.
    private func recordDenial(_ error: TokenGateError, _ query: TokenQuery, in serving: Serving) {
        let runtime = ProviderID(query.providerID).flatMap { serving.pipelines[$0]?.runtime }
        let type = TokenType(rawValue: query.tokenType)
        if let runtime {
            runtime.metrics.recordDenial(error.code, type: type)
        } else {
            serving.generation.metrics.recordDenialWithoutProvider(error.code, type: type)
        }
        denials.record(
            error, provider: runtime?.id, sent: runtime?.id.rawValue ?? Sanitized.quote(query.providerID),
            type: type?.rawValue ?? Sanitized.quote(query.tokenType), peer: query.peer, requestID: query.requestID)
    }

    /// A refusal after admission, counted on the pipeline that refused it.
    private func recordDenial(_ error: TokenGateError, _ admission: TokenAdmission) {
        let runtime = admission.pipeline.runtime
        runtime.metrics.recordDenial(error.code, type: admission.type)
        denials.record(
            error, provider: runtime.id, sent: runtime.id.rawValue, type: admission.type.rawValue, peer: admission.query.peer,
            requestID: admission.query.requestID)
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
