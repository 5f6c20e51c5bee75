import Logging

/// What every provider's pipeline shares with the others and keeps across generations: time, the log, the audit
/// log, the ended contexts, the store replicas share and the tracer.
struct GatewayServices: Sendable {
    let clock: TokenGateClock
    let logger: Logger
    let audit: AuditLog
    let endedContexts: EndedContexts
    let sharedState: SharedState?
    /// How long a mint whose token names an unknown `kid` waits for the early JWKS refetch it asks for.
    let unknownKeyWait: Duration
    /// The spans requests make, or none.
    let spans: RequestSpans
}
