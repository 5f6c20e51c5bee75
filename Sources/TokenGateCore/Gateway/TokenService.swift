package import Logging
package import Tracing

/// The gateway without HTTP: turns a raw token request into a verified token or a coded error.
///
/// It holds the generation being served and each of its providers' `ProviderPipeline`, swapped together by
/// ``install(_:)``; a request reads them once and finishes on them. It dispatches a request to its provider's
/// pipeline, logs and counts what is refused, and serves each provider's public keys. Two doors lead in:
/// ``cachedToken(for:)`` answers synchronously what a cached token can (the HTTP face calls it on the event
/// loop) and hands anything else on as its ``TokenAdmission``; ``token(for:)-(TokenQuery)`` does it all.
package final class TokenService: Sendable {
    private let current: ServingSlot
    private let formatter: TokenBodyWriterFactory
    private let services: GatewayServices
    private let denials: DenialLog
    /// The gateway's time (the system's, or a test's).
    package var clock: TokenGateClock { services.clock }
    /// Where the service logs.
    var logger: Logger { services.logger }
    /// Where every token a backend issued is recorded.
    package var audit: AuditLog { services.audit }
    /// The store replicas share tokens, limits and ended contexts in (`sharedState:`), or nil for one process.
    package var sharedState: SharedState? { services.sharedState }
    /// Ends and lifts contexts (the admin API); outlives every generation.
    package let contexts: ContextLifecycle
    /// Each provider's readiness over time, and the process's verdict; outlives every generation.
    private let readinessTracker: ReadinessTracker
    /// What each provider's acceptance check found (`acceptanceCheck:`); outlives every generation.
    package let acceptance: AcceptanceResults

    /// How long a mint whose token names an unknown `kid` waits for the early JWKS refetch it asks for.
    package static let defaultUnknownKeyWait = Duration.seconds(3)

    /// Serves `generation`; `formatter` makes each provider's response format once per generation. With a
    /// `tracer`, the full path records its steps as spans (children of the current span: the HTTP request's).
    package init(
        generation: GatewayGeneration, formatter: @escaping TokenBodyWriterFactory, audit: AuditLog? = nil,
        sharedState: SharedState? = nil, clock: TokenGateClock = .system, unknownKeyWait: Duration = defaultUnknownKeyWait,
        tracer: (any Tracer)? = nil, logger: Logger
    ) {
        let services = GatewayServices(
            clock: clock, logger: logger, audit: audit ?? .disabled(logger: logger),
            endedContexts: EndedContexts.forGateway(generation.configuration.endedContexts, shared: sharedState != nil), sharedState: sharedState,
            unknownKeyWait: unknownKeyWait, spans: RequestSpans(tracer: tracer))
        let current = ServingSlot(Serving(generation, formatter: formatter, services: services))
        self.current = current
        self.services = services
        self.formatter = formatter
        self.denials = DenialLog(clock: clock, logger: logger)
        let acceptance = AcceptanceResults(clock: clock, logger: logger, metrics: generation.metrics)
        self.acceptance = acceptance
        self.readinessTracker = ReadinessTracker(clock: clock, logger: logger, factory: generation.metrics.factory, acceptance: acceptance)
        self.contexts = ContextLifecycle(
            endedContexts: services.endedContexts, sharedState: sharedState, clock: clock, logger: logger,
            generation: { current.serving.generation })
        generation.metrics.recordGeneration(generation.number)
        generation.metrics.recordTenantConfigurations(of: generation, previous: nil)
    }

    /// The tracer requests are traced with, or nil: with one, the HTTP face starts a server span for each
    /// sampled request (``traceSampler``), and answers the others from the event loop's fast path too.
    package var tracer: (any Tracer)? { services.spans.tracer }

    /// How requests are sampled: the tracer's (``RedactingTracer``), else every one.
    package var traceSampler: TraceSampler { (tracer as? RedactingTracer)?.sampler ?? .always }

    /// The generation requests are served from now.
    package var generation: GatewayGeneration { current.serving.generation }

    /// Swaps in `next`; requests already running finish on the generation they read.
    package func install(_ next: GatewayGeneration) {
        let previous = current.serving.generation
        current.serving = Serving(next, formatter: formatter, services: services)
        next.metrics.recordGeneration(next.number)
        next.metrics.recordTenantConfigurations(of: next, previous: previous)
    }

    /// The acceptance checks of `generation`'s providers, to run while it serves (the reloader runs them beside
    /// its other work); nil when no provider has one, or when `generation` is no longer the one served. Forgets
    /// the results of checks `generation` no longer has.
    package func acceptanceChecks(of generation: GatewayGeneration) -> AcceptanceCheckRunner? {
        let serving = current.serving
        guard serving.generation === generation else { return nil }
        acceptance.retain(generation.providers.compactMapValues { $0.acceptanceCheck?.settings })
        let pipelines = serving.pipelines.keys.sorted().compactMap { serving.pipelines[$0] }.filter { $0.runtime.acceptanceCheck != nil }
        return pipelines.isEmpty ? nil : AcceptanceCheckRunner(pipelines: pipelines, results: acceptance)
    }

    /// Runs the acceptance check of `providerID` once, now, and records what it found (`check-config --online`);
    /// nil when the provider has no check.
    package func checkAcceptance(of providerID: ProviderID) async -> [(type: TokenType, outcome: AcceptanceOutcome)]? {
        guard let pipeline = current.serving.pipelines[providerID], let check = pipeline.runtime.acceptanceCheck else { return nil }
        let outcomes = await pipeline.checkAcceptance(check)
        for (probe, outcome) in outcomes { acceptance.record(outcome, of: probe, at: providerID) }
        return outcomes.map { ($0.0.type, $0.1) }
    }

    /// Whether this process can serve now, with each provider's state (`/readyz`); records what changed.
    @discardableResult
    package func readiness() -> GatewayReadiness { readinessTracker.evaluate(generation) }

    /// Sets the gauges that are read rather than counted: the generation's, and readiness. Call before exporting.
    package func updateGauges() {
        generation.updateGauges()
        readiness()
    }

    /// Logs the counts of denials that were not logged one by one (call it every few seconds).
    package func flushDenialLog() { denials.flush() }

    /// A verified token for `query`, or a `TokenGateError` with a stable code. Denials are logged in aggregate.
    package func token(for query: TokenQuery) async throws(TokenGateError) -> TokenGrant {
        let serving = current.serving
        let admission: TokenAdmission
        do {
            admission = try services.spans.run(.authenticate, { () throws(TokenGateError) in try serving.admit(query) }) {
                ($0.pipeline.runtime.id, $0.type)
            }
        } catch {
            denials.record(error, query, in: serving)
            throw error
        }
        return try await token(for: admission)
    }

    /// The rest of the full path for a request ``cachedToken(for:)`` admitted and handed on.
    package func token(for admission: TokenAdmission) async throws(TokenGateError) -> TokenGrant {
        do {
            return try await admission.pipeline.grant(admission)
        } catch {
            denials.record(error, admission)
            throw error
        }
    }

    /// ``token(for:)-(TokenAdmission)`` without a task, for a cached token whose only wait is the limits shared
    /// in the store: `completion` is called once when the store answers, on the thread that asked (an event loop).
    /// False when only the full path can answer; nothing was charged then.
    package func token(
        afterSharedLimits admission: TokenAdmission, completion: @escaping @Sendable (Result<TokenGrant, TokenGateError>) -> Void
    ) -> Bool {
        admission.pipeline.cachedGrant(afterSharedLimits: admission) { result in
            if case .failure(let error) = result { self.denials.record(error, admission) }
            completion(result)
        }
    }

    /// What ``cachedToken(for:)`` decided.
    package enum CachedAnswer: Sendable {
        /// The cached token, every check passed: answer with it.
        case granted(TokenGrant)
        /// A check refused the request (already counted and logged, and any limit charged): answer with the error.
        case refused(TokenGateError)
        /// Admitted, but only ``token(for:)-(TokenAdmission)`` can answer: no limit was charged, nothing counted.
        case needsFullPath(TokenAdmission)
    }

    /// ``token(for:)-(TokenQuery)`` for a request a cached token can answer at once, synchronously (from an event
    /// loop): the same admission, then `ProviderPipeline.cachedGrant(_:)`.
    package func cachedToken(for query: TokenQuery) -> CachedAnswer {
        let serving = current.serving
        var admission: TokenAdmission?
        do throws(TokenGateError) {
            let admitted = try serving.admit(query)
            admission = admitted
            guard let grant = try admitted.pipeline.cachedGrant(admitted) else { return .needsFullPath(admitted) }
            return .granted(grant)
        } catch {
            if let admission { denials.record(error, admission) } else { denials.record(error, query, in: serving) }
            return .refused(error)
        }
    }

    /// Logs (in aggregate) and counts a token request refused with `error` before it became a query (an oversized
    /// URL, a bad query string, a browser origin not allowed), on the generation served now.
    package func recordDenial(_ error: TokenGateError, providerID: String, tokenType: String, peer: PeerAddress?, requestID: String?) {
        let query = TokenQuery(providerID: providerID, tokenType: tokenType, parameters: [:], authorization: nil, peer: peer, requestID: requestID)
        denials.record(error, query, in: current.serving)
    }

    /// The public keys that verify a provider's tokens, as a JWKS document.
    package func publicKeys(providerID: String) throws(TokenGateError) -> [UInt8] {
        guard let pipeline = current.serving.pipeline(named: providerID) else { throw TokenGateError(.unknownProvider, "no provider with that ID") }
        return try pipeline.runtime.keys.publicJWKS()
    }
}
