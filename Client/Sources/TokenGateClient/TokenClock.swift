public import Foundation

/// Wall-clock time and sleeping, injected so tests drive time by hand and never sleep for real.
///
/// ```swift
/// final class ManualClock: TokenClock, @unchecked Sendable {   // guarded by a lock
///     var now: Date { lock.withLock { current } }
///     func sleep(for seconds: TimeInterval) async throws { lock.withLock { current += seconds } }
/// }
/// ```
public protocol TokenClock: Sendable {
    /// The current wall-clock time; token expiries are compared with it.
    var now: Date { get }
    /// Suspends for `seconds` (retry backoff); throws `CancellationError` if the task is cancelled.
    func sleep(for seconds: TimeInterval) async throws
}

/// The system clock: `Date()` and `Task.sleep`.
public struct SystemTokenClock: TokenClock {
    /// The system clock.
    public init() {}

    public var now: Date { Date() }

    public func sleep(for seconds: TimeInterval) async throws {
        try await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
    }
}
