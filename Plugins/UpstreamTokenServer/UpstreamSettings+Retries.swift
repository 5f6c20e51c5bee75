import OutboundHTTP
import TokenGateCore

extension UpstreamSettings {
    /// How often and how patiently an upstream call is retried (`retries:`), as the one retrying exchange's policy:
    /// `maxAttempts` calls in all (1 to 10, default 3), the first included; `initialBackoff` (default 100ms) doubling
    /// up to `maxBackoff` (default 2s) between them, each between 1ms and 60s, scaled by a jitter in `0.5...1` and
    /// never shorter than the upstream's `Retry-After`.
    static func parseRetries(_ node: ConfigNode) throws -> RetryPolicy {
        let mapping = try node.mapping(allowedKeys: ["maxAttempts", "initialBackoff", "maxBackoff"])
        var policy = defaultRetries
        if let attempts = mapping.optional("maxAttempts") { policy.maxAttempts = try attempts.int(in: 1...10) }
        if let initial = mapping.optional("initialBackoff") { policy.initialBackoff = try positive(initial) }
        if let maximum = mapping.optional("maxBackoff") {
            policy.maxBackoff = try positive(maximum)
            guard policy.maxBackoff >= policy.initialBackoff else { throw maximum.error("must be at least initialBackoff") }
        }
        return policy
    }

    /// Three attempts, 100 ms doubling up to 2 s between them.
    static let defaultRetries = RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(100), maxBackoff: .seconds(2))

    private static func positive(_ node: ConfigNode) throws -> Duration {
        let duration = try node.duration()
        guard duration > .zero, duration <= .seconds(60) else { throw node.error("must be between 1ms and 60s") }
        return duration
    }
}
