public import Logging
public import TokenGateCore

extension TokenService {
    /// A service whose token responses are TokenGate's JSON body (``RenderedTokenBody``).
    public convenience init(
        generation: GatewayGeneration, audit: AuditLog? = nil, sharedState: SharedState? = nil, clock: TokenGateClock = .system,
        logger: Logger
    ) {
        self.init(
            generation: generation,
            render: { RenderedTokenBody(token: $0, context: $1, provider: $2) },
            audit: audit,
            sharedState: sharedState,
            clock: clock,
            logger: logger
        )
    }
}
