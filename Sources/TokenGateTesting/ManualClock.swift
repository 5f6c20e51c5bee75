import Synchronization
public import TokenGateCore

/// A clock tests move by hand: wall time in epoch seconds and monotonic time advance together.
public final class ManualClock: Sendable {
    private let state: Mutex<(wall: Int64, monotonic: UInt64)>

    /// Starts at `wallSeconds` (epoch seconds).
    public init(wallSeconds: Int64 = 1_800_000_000) {
        state = Mutex((wallSeconds, 1_000_000_000))
    }

    /// The current wall time, epoch seconds.
    public var now: Int64 { state.withLock { $0.wall } }

    /// Moves both clocks forward.
    public func advance(by duration: Duration) {
        state.withLock {
            $0.wall += duration.components.seconds
            $0.monotonic += UInt64(duration.components.seconds) * 1_000_000_000
                + UInt64(duration.components.attoseconds / 1_000_000_000)
        }
    }

    /// Moves the wall clock alone, forward or back, as NTP or an operator setting the date does; monotonic time
    /// does not move.
    public func jumpWall(by seconds: Int64) {
        state.withLock { $0.wall += seconds }
    }

    /// The clock to inject into TokenGate components.
    public var gatewayClock: TokenGateClock {
        TokenGateClock(
            wallSeconds: { [self] in state.withLock { $0.wall } },
            monotonicNanoseconds: { [self] in state.withLock { $0.monotonic } }
        )
    }
}
