import Logging
import Synchronization

/// Logs rate-limit refusals an operator wants to read about in aggregate: what a limit in `shadow` mode would have
/// refused (an operator trying a new limit before enforcing it), which callers reached their distinct-contexts cap (a
/// leaked credential harvesting the fleet), and mints past the provider's budget. The first refusal of each kind is logged at once, then at most
/// one line per kind every ``interval`` seconds with the count since the last.
final class RateLimitRefusalLog: Sendable {
    static let interval: Int64 = 10
    /// The most kinds tracked at once: callers are many; past it the tally starts afresh (lines, not refusals, lost).
    static let maxKinds = 10_000

    private let logger: Logger
    private let clock: TokenGateClock
    /// Per kind: when its last line was written (epoch seconds), and the refusals since.
    private let state = Mutex<[String: (loggedAt: Int64, unlogged: Int)]>([:])

    init(logger: Logger, clock: TokenGateClock) {
        self.logger = logger
        self.clock = clock
    }

    /// What a shadow limit of `scope` would have refused.
    func recordShadow(_ scope: ProviderMetrics.RateLimitScope, limit: RateLimit) {
        guard let due = tally(scope.rawValue) else { return }
        logger.notice(
            "a shadow rate limit would have refused requests; they were let through",
            metadata: ["scope": "\(scope.rawValue)", "limit": "\(limit)", "refusals": "\(due)"])
    }

    /// A new context refused to `caller` by its distinct-contexts cap `scope` (`all` or a token type).
    func recordDistinctContexts(_ caller: AuthenticatedCaller, scope: String, cap: DistinctContextLimits.Cap, shadow: Bool) {
        guard let due = tally("distinct\u{0}\(caller.name)\u{0}\(caller.subject ?? "")\u{0}\(scope)") else { return }
        var metadata: Logger.Metadata = [
            "client": "\(caller.name)", "cap": "\(scope) \(cap)", "refusals": "\(due)", "shadow": "\(shadow)",
        ]
        if let subject = caller.subject { metadata["subject"] = "\(subject)" }
        logger.warning(
            shadow
                ? "a caller went past its shadow distinct-contexts cap; let through"
                : "a caller reached its distinct-contexts cap: new contexts refused until the window ends",
            metadata: metadata)
    }

    /// A new mint refused by the provider's mint budget (`backend.mintBudget`).
    func recordMintBudget(_ budget: RateLimit) {
        guard let due = tally("mint_budget") else { return }
        logger.warning(
            "the provider is past its mint budget: new contexts refused 429 until it refills; cached tokens are still served",
            metadata: ["budget": "\(budget)", "refusals": "\(due)"])
    }

    /// Counts one refusal of `kind`; the count to log when a line is due.
    private func tally(_ kind: String) -> Int? {
        let now = clock.wallSeconds()
        return state.withLock { state -> Int? in
            guard let last = state[kind], now - last.loggedAt < Self.interval else {
                let count = (state[kind]?.unlogged ?? 0) + 1
                if state.count >= Self.maxKinds { state.removeAll(keepingCapacity: true) }
                state[kind] = (now, 0)
                return count
            }
            state[kind]?.unlogged += 1
            return nil
        }
    }
}
