import Foundation
import TokenGateCore

/// How often and how patiently an upstream call is retried.
///
/// Only connection failures, 5xx and 429 are retried; any other 4xx, a redirect or an unusable body is final.
/// The delay before retry `n` (1-based) is `initialBackoff · 2^(n-1)`, capped at `maxBackoff`, scaled by a jitter
/// factor in `0.5...1`, and never shorter than the upstream's `Retry-After`.
struct UpstreamRetryPolicy: Sendable, Equatable {
    /// Calls in all, the first included.
    var maxAttempts = 3
    /// The delay before the first retry, before jitter.
    var initialBackoff: Duration = .milliseconds(100)
    /// The longest delay between two attempts, before `Retry-After`.
    var maxBackoff: Duration = .seconds(2)

    static func parse(_ node: ConfigNode) throws -> UpstreamRetryPolicy {
        let mapping = try node.mapping(allowedKeys: ["maxAttempts", "initialBackoff", "maxBackoff"])
        var policy = UpstreamRetryPolicy()
        if let attempts = mapping.optional("maxAttempts") { policy.maxAttempts = try attempts.int(in: 1...10) }
        if let initial = mapping.optional("initialBackoff") { policy.initialBackoff = try positive(initial) }
        if let maximum = mapping.optional("maxBackoff") {
            policy.maxBackoff = try positive(maximum)
            guard policy.maxBackoff >= policy.initialBackoff else { throw maximum.error("must be at least initialBackoff") }
        }
        return policy
    }

    private static func positive(_ node: ConfigNode) throws -> Duration {
        let duration = try node.duration()
        guard duration > .zero, duration <= .seconds(60) else { throw node.error("must be between 1ms and 60s") }
        return duration
    }

    /// The delay before retry number `retry` (1 for the first retry), with `jitter` in `0...1`.
    func backoff(beforeRetry retry: Int, jitter: Double, retryAfter: Duration?) -> Duration {
        let doublings = min(max(retry - 1, 0), 30)
        var delay = initialBackoff * (1 << doublings)
        if delay > maxBackoff || delay < .zero { delay = maxBackoff }
        delay = delay * (0.5 + 0.5 * min(max(jitter, 0), 1))
        if let retryAfter, retryAfter > delay { delay = retryAfter }
        return delay
    }

    /// `Retry-After` as delay-seconds (RFC 9110 §10.2.3); an HTTP-date or garbage is ignored.
    static func retryAfter(_ header: String?) -> Int? {
        guard let header else { return nil }
        let text = header.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, text.count <= 9, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)
    }
}
