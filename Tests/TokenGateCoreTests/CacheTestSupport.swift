import Synchronization
import TokenGateCore
import TokenGateCoreTesting

struct TestToken: Expiring, Equatable {
    var serial: Int
    var expiresAt: Int64
}

struct TestBackendError: Error, Equatable {
    var attempt: Int
}

/// Opens once; everyone who waits before or after that passes.
final class AsyncGate: Sendable {
    private let state = Mutex<(isOpen: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isOpen = state.withLock { state in
                if !state.isOpen { state.waiters.append(continuation) }
                return state.isOpen
            }
            if isOpen { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// A backend stand-in: counts calls, mints tokens of a fixed lifetime on the manual clock, can fail or block.
final class TestTokenSource: Sendable {
    private struct Settings {
        var calls = 0
        var isFailing = false
        var lifetime: Int64 = 3_600
        var gate: AsyncGate?
    }

    private let clock: ManualClock
    private let settings = Mutex(Settings())

    init(clock: ManualClock) { self.clock = clock }

    var calls: Int { settings.withLock { $0.calls } }

    var isFailing: Bool {
        get { settings.withLock { $0.isFailing } }
        set { settings.withLock { $0.isFailing = newValue } }
    }

    var lifetime: Int64 {
        get { settings.withLock { $0.lifetime } }
        set { settings.withLock { $0.lifetime = newValue } }
    }

    /// Fetches started from now on block until this gate opens.
    var gate: AsyncGate? {
        get { settings.withLock { $0.gate } }
        set { settings.withLock { $0.gate = newValue } }
    }

    func fetch() async throws -> TestToken {
        let (attempt, gate) = settings.withLock { settings in
            settings.calls += 1
            return (settings.calls, settings.gate)
        }
        await gate?.wait()
        try Task.checkCancellation()  // the shared fetch must never see a waiter's cancellation
        let (isFailing, lifetime) = settings.withLock { ($0.isFailing, $0.lifetime) }
        if isFailing { throw TestBackendError(attempt: attempt) }
        return TestToken(serial: attempt, expiresAt: clock.now + lifetime)
    }
}
