public import Foundation

/// Bounded exponential backoff with jitter for network errors, 5xx and 429.
///
/// 400, 403, 404, 410 and unusable bodies are never retried (a 401 is retried once, outside this count, when the
/// credential source then returns another credential). An answer with `Retry-After` (a 429, a 503) waits exactly
/// that when it is at most ``maximumRetryAfter``; a longer one is surfaced at once (a 429's then cools the context
/// down: ``TokenProvider``). The defaults are the browser and Android clients' too (docs/client.md).
///
/// ```swift
/// var policy = RetryPolicy.default
/// policy.maximumAttempts = 2      // one retry
/// ```
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included; at least 1.
    public var maximumAttempts: Int
    /// The delay before the first retry, in seconds.
    public var initialDelay: TimeInterval
    /// The factor applied to the delay after each retry.
    public var multiplier: Double
    /// The cap on a backoff delay, in seconds.
    public var maximumDelay: TimeInterval
    /// The fraction of a delay that is randomised away (0 = none, 1 = full jitter): delay × (1 − jitter × r).
    public var jitter: Double
    /// The longest `Retry-After` the provider waits for; longer ones fail fast so the app is not stalled: the SDKs'
    /// location updates wait while a token is fetched.
    public var maximumRetryAfter: TimeInterval

    /// A policy; the defaults are those of ``default``.
    public init(
        maximumAttempts: Int = 3, initialDelay: TimeInterval = 0.5, multiplier: Double = 2,
        maximumDelay: TimeInterval = 8, jitter: Double = 0.5, maximumRetryAfter: TimeInterval = 5
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialDelay = max(0, initialDelay)
        self.multiplier = max(1, multiplier)
        self.maximumDelay = max(0, maximumDelay)
        self.jitter = min(1, max(0, jitter))
        self.maximumRetryAfter = max(0, maximumRetryAfter)
    }

    /// 3 attempts; 0.5 s then 1 s (doubling, capped at 8 s), each shortened by up to half at random; `Retry-After`
    /// ≤ 5 s.
    public static let `default` = RetryPolicy()

    /// One attempt: errors surface at once.
    public static let none = RetryPolicy(maximumAttempts: 1)

    /// The backoff before retry number `retry` (1-based), with `random` in `0..<1` supplying the jitter.
    public func delay(beforeRetry retry: Int, random: Double) -> TimeInterval {
        let exponential = initialDelay * pow(multiplier, Double(max(0, retry - 1)))
        return min(maximumDelay, exponential) * (1 - jitter * random)
    }

    /// How long to wait after `error` before attempt `attempt + 1`, or `nil` to give up and surface it.
    func delay(after error: TokenGateClientError, attempt: Int, random: Double) -> TimeInterval? {
        guard error.isRetryable, attempt < maximumAttempts else { return nil }
        if let retryAfter = error.retryAfter {
            return retryAfter <= maximumRetryAfter ? retryAfter : nil
        }
        return delay(beforeRetry: attempt, random: random)
    }
}
