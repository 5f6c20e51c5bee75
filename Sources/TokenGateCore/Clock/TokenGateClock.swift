#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The two clocks TokenGate reads: wall time for token validity, monotonic time for timers.
///
/// Token expiry (`exp`) is wall time in epoch seconds, so validity checks read ``wallSeconds``. Intervals the gateway
/// measures itself (refresh retries, rate limits) read ``monotonicNanoseconds``, which never jumps when NTP steps the
/// wall clock. Both are closures so tests inject a manual clock:
///
/// ```swift
/// let clock = TokenGateClock(wallSeconds: { 1_700_000_000 }, monotonicNanoseconds: { 0 })
/// let context = BackendContext(provider: id, section: section, audience: FleetEngineClaims.defaultAudience, clock: clock, logger: logger)
/// ```
public struct TokenGateClock: Sendable {
    /// Wall-clock time in whole seconds since the Unix epoch, rounded down.
    public var wallSeconds: @Sendable () -> Int64
    /// Nanoseconds on a monotonic clock; only differences between two readings mean anything.
    public var monotonicNanoseconds: @Sendable () -> UInt64

    /// A clock reading the given closures.
    public init(
        wallSeconds: @escaping @Sendable () -> Int64,
        monotonicNanoseconds: @escaping @Sendable () -> UInt64
    ) {
        self.wallSeconds = wallSeconds
        self.monotonicNanoseconds = monotonicNanoseconds
    }

    /// The system clocks: `Date` for wall time, `ContinuousClock` for monotonic time.
    public static let system = TokenGateClock(
        wallSeconds: { Int64(Date().timeIntervalSince1970.rounded(.down)) },
        monotonicNanoseconds: { nanoseconds(systemEpoch.duration(to: .now)) }
    )

    // Monotonic readings count from the first use of `system`; a process-wide origin keeps them comparable.
    private static let systemEpoch = ContinuousClock.now
}

extension TokenGateClock {
    /// `duration` in nanoseconds, clamped to `0...UInt64.max`.
    static func nanoseconds(_ duration: Duration) -> UInt64 {
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return .max }
        let (sum, carry) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return carry ? .max : sum
    }

    /// `duration` in whole seconds, rounded up (so a minimum is never weakened), clamped to `0...Int64.max`.
    static func secondsRoundingUp(_ duration: Duration) -> Int64 {
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        return attoseconds > 0 && seconds < .max ? seconds + 1 : seconds
    }
}
