import CoreMetrics

/// A guard's instruments: `tokengate_circuit_state{provider, call, token_type}` (0 closed, 1 half-open, 2 open),
/// `tokengate_circuit_transitions_total{provider, call, token_type, to}` and `tokengate_backend_refusals_total{provider,
/// call, token_type, reason}` (`circuit_open`, `queue_full`; an authorizer guard's refusals too, `call="authorizer"`).
/// `token_type` is a backend call guard's (one per type); an authorizer's guard has none (`""`).
struct CallGuardMetrics: Sendable {
    private let labels: [(String, String)]
    private let state: Gauge?
    private let labeled: LabeledCounters?

    /// Counts nothing (tests of the guard alone).
    static let none = CallGuardMetrics(labels: [], state: nil, labeled: nil)

    private init(labels: [(String, String)], state: Gauge?, labeled: LabeledCounters?) {
        self.labels = labels
        self.state = state
        self.labeled = labeled
    }

    init(provider: ProviderID, call: CallGuard.CallKind, tokenType: TokenType?, factory: any MetricsFactory, labeled: LabeledCounters) {
        let labels = [("provider", provider.rawValue), ("call", call.rawValue), ("token_type", tokenType?.rawValue ?? "")]
        self.init(labels: labels, state: Gauge(label: GatewayMetrics.Name.circuitState, dimensions: labels, factory: factory), labeled: labeled)
    }

    func recordState(_ circuit: CallGuard.CircuitState) { state?.record(circuit.gaugeValue) }

    func recordTransition(to circuit: CallGuard.CircuitState) {
        recordState(circuit)
        labeled?.increment(GatewayMetrics.Name.circuitTransitions, labels + [("to", circuit.rawValue)])
    }

    func recordRefusal(_ reason: String) {
        labeled?.increment(GatewayMetrics.Name.backendRefusals, labels + [("reason", reason)])
    }
}
