/// How many attempts a ``RetryingExchange`` makes and how long it waits between them.
///
/// The wait before retry `n` (1 for the first retry) is `initialBackoff · 2^(n-1)`, at most `maxBackoff` (the
/// ceiling), scaled by a jitter factor in `0.5...1`, and never shorter than the server's `Retry-After`. The exchange
/// never waits past its deadline: a wait that would end there ends the exchange at once, with the last failure.
///
/// ```swift
/// let retries = RetryPolicy(maxAttempts: 3)   // 100 ms, then 200 ms (each up to half shorter at random)
/// ```
package struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all, the first included.
    package var maxAttempts: Int
    /// The wait before the first retry, before jitter.
    package var initialBackoff: Duration
    /// The longest wait between two attempts, before jitter and `Retry-After`.
    package var maxBackoff: Duration

    /// A policy of `maxAttempts` attempts in all.
    package init(maxAttempts: Int, initialBackoff: Duration = .milliseconds(100), maxBackoff: Duration = .seconds(2)) {
        self.maxAttempts = maxAttempts
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
    }

    /// One attempt, no retry: a key-set fetch, an authorizer's question (their callers decide when to ask again).
    package static let once = RetryPolicy(maxAttempts: 1)

    /// As many attempts as the deadline leaves room for, 100 ms doubling up to 2 s between them.
    package static let untilDeadline = RetryPolicy(maxAttempts: .max)

    /// The wait before retry number `retry` (1 for the first retry), with `jitter` in `0...1` (clamped), at least
    /// `retryAfter`.
    package func delay(beforeRetry retry: Int, jitter: Double, retryAfter: Duration?) -> Duration {
        let doublings = min(max(retry - 1, 0), 30)
        var delay = initialBackoff * (1 << doublings)
        if delay > maxBackoff || delay < .zero { delay = maxBackoff }
        delay = delay * (0.5 + 0.5 * min(max(jitter, 0), 1))
        if let retryAfter, retryAfter > delay { delay = retryAfter }
        return delay
    }
}
