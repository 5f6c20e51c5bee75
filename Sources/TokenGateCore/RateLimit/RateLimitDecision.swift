/// What ``RateLimiter/acquireMeasured(_:)`` decided, and the bucket it left.
package struct RateLimitQuota: Sendable, Hashable {
    /// Whether the request may proceed.
    package let decision: RateLimitDecision
    /// Requests the bucket would still let through back to back now.
    package let remaining: Int
    /// Nanoseconds until the bucket is full again.
    package let resetNanoseconds: UInt64
}

/// The answer of ``RateLimiter/acquire(_:)``.
package enum RateLimitDecision: Sendable, Hashable {
    /// The request may proceed.
    case allowed
    /// The request must be refused; one would be allowed after `retryAfter`.
    case limited(retryAfter: Duration)

    /// Whether the request may proceed.
    package var isAllowed: Bool {
        if case .allowed = self { true } else { false }
    }

    /// The `Retry-After` header value: `retryAfter` in whole seconds, rounded up, at least 1; `nil` when allowed.
    package var retryAfterSeconds: Int? {
        guard case .limited(let retryAfter) = self else { return nil }
        return Int(clamping: max(1, TokenGateClock.secondsRoundingUp(retryAfter)))
    }
}
