import Synchronization
import Testing
import TokenGateCore

/// A clock that moves only when a test says so. Both readings start at fixed values.
final class ManualTestClock: Sendable {
    private let readings: Mutex<(wall: Int64, monotonic: UInt64)>

    init(wallSeconds: Int64 = 1_700_000_000, monotonicNanoseconds: UInt64 = 1_000_000_000) {
        readings = Mutex((wallSeconds, monotonicNanoseconds))
    }

    var wallSeconds: Int64 { readings.withLock { $0.wall } }
    var monotonicNanoseconds: UInt64 { readings.withLock { $0.monotonic } }

    /// Moves wall and monotonic time forward together, as real time does.
    func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        readings.withLock {
            $0.wall += seconds
            $0.monotonic += UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
        }
    }

    var clock: TokenGateClock {
        TokenGateClock(wallSeconds: { self.wallSeconds }, monotonicNanoseconds: { self.monotonicNanoseconds })
    }
}

/// Spins (yielding, never sleeping) until `condition` holds; records an issue and throws after a bounded number of
/// turns.
func yieldUntil(
    _ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    for _ in 0..<1_000_000 {
        if condition() { return }
        await Task.yield()
    }
    Issue.record("condition still false after 1 000 000 turns", sourceLocation: sourceLocation)
    throw ConditionNeverHeld()
}

struct ConditionNeverHeld: Error {}
