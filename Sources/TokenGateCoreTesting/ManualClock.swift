import Synchronization
package import TokenGateCore

/// A clock tests move by hand: wall time in epoch seconds, and monotonic time, which moves with it unless a test
/// jumps the wall clock alone.
package final class ManualClock: Sendable {
    private let state: Mutex<(wall: Int64, monotonic: UInt64)>

    /// Starts at `wallSeconds` (epoch seconds) and `monotonicNanoseconds`.
    package init(wallSeconds: Int64 = 1_800_000_000, monotonicNanoseconds: UInt64 = 1_000_000_000) {
        state = Mutex((wallSeconds, monotonicNanoseconds))
    }

    /// The current wall time, epoch seconds.
    package var now: Int64 { state.withLock { $0.wall } }

    /// The current monotonic time, nanoseconds.
    package var monotonicNanoseconds: UInt64 { state.withLock { $0.monotonic } }

    /// Moves both clocks forward, as real time does.
    package func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        state.withLock {
            $0.wall += seconds
            $0.monotonic += UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
        }
    }

    /// Moves both clocks forward until the wall clock reads `wallSeconds` (never back).
    package func advance(to wallSeconds: Int64) {
        let ahead = wallSeconds - now
        precondition(ahead >= 0, "advance(to:) only moves forward; jumpWall(by:) moves the wall clock back")
        advance(by: .seconds(ahead))
    }

    /// Moves the wall clock alone, forward or back, as NTP or an operator setting the date does; monotonic time
    /// does not move.
    package func jumpWall(by seconds: Int64) {
        state.withLock { $0.wall += seconds }
    }

    /// The clock to inject into TokenGate components.
    package var gatewayClock: TokenGateClock {
        TokenGateClock(
            wallSeconds: { [self] in state.withLock { $0.wall } },
            monotonicNanoseconds: { [self] in state.withLock { $0.monotonic } }
        )
    }
}
