import Logging
import Synchronization

/// Logs what a limit in `shadow` mode would have refused, for an operator trying a new limit before enforcing it:
/// the first refusal at once, then at most one line per limit every ``interval`` with the count since the last.
final class ShadowRefusalLog: Sendable {
    static let interval: Int64 = 10

    private let logger: Logger
    private let clock: TokenGateClock
    /// Per scope: when its last line was written (epoch seconds), and the refusals since.
    private let state = Mutex<[ProviderMetrics.RateLimitScope: (loggedAt: Int64, unlogged: Int)]>([:])

    init(logger: Logger, clock: TokenGateClock) {
        self.logger = logger
        self.clock = clock
    }

    func record(_ scope: ProviderMetrics.RateLimitScope, limit: RateLimit) {
        let now = clock.wallSeconds()
        let due = state.withLock { state -> Int? in
            guard let last = state[scope], now - last.loggedAt < Self.interval else {
                let count = (state[scope]?.unlogged ?? 0) + 1
                state[scope] = (now, 0)
                return count
            }
            state[scope]?.unlogged += 1
            return nil
        }
        guard let due else { return }
        logger.notice(
            "a shadow rate limit would have refused requests; they were let through",
            metadata: ["scope": "\(scope.rawValue)", "limit": "\(limit)", "refusals": "\(due)"])
    }
}
