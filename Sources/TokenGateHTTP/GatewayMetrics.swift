import Metrics
import TokenGateCore

/// Counters made once, so the request path only increments (swift-metrics looks factories up on creation).
struct GatewayMetrics: Sendable {
    private let outcomes: [TokenCacheOutcome: Counter]
    private let errors: [TokenGateError.Code: Counter]

    init() {
        var outcomes: [TokenCacheOutcome: Counter] = [:]
        for outcome in TokenCacheOutcome.allCases {
            outcomes[outcome] = Counter(label: "tokengate_tokens_served_total", dimensions: [("cache", outcome.rawValue)])
        }
        self.outcomes = outcomes
        var errors: [TokenGateError.Code: Counter] = [:]
        for code in TokenGateError.Code.allCases {
            errors[code] = Counter(label: "tokengate_token_errors_total", dimensions: [("code", code.rawValue)])
        }
        self.errors = errors
    }

    func record(_ outcome: TokenCacheOutcome) { outcomes[outcome]?.increment() }

    func record(_ code: TokenGateError.Code) { errors[code]?.increment() }
}
