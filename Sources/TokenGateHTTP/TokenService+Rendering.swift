package import Logging
package import TokenGateCore
package import Tracing

extension TokenService {
    /// A service whose token responses are TokenGate's JSON body (``TokenBodyFormat``).
    package convenience init(
        generation: GatewayGeneration, audit: AuditLog? = nil, sharedState: SharedState? = nil, clock: TokenGateClock = .system,
        unknownKeyWait: Duration = TokenService.defaultUnknownKeyWait, tracer: (any Tracer)? = nil, logger: Logger
    ) {
        self.init(
            generation: generation,
            formatter: { TokenBodyFormat(provider: $0) },
            audit: audit,
            sharedState: sharedState,
            clock: clock,
            unknownKeyWait: unknownKeyWait,
            tracer: tracer,
            logger: logger
        )
    }
}
