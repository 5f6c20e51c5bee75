import Synchronization

/// At most `limit` IAM calls in flight for one provider; the others wait their turn in arrival order, each until
/// its own deadline. No thread is blocked: a waiter is a suspended task.
///
/// Not a second `BackendGuard` (TokenGateCore's `Isolation/`; the design review of 2026-12-01 asked, issue 48 kept
/// it): the guard caps one token type's backend calls, with a short queue whose overflow is refused at once, and
/// counts their outcomes for its breaker; this caps the provider's IAM calls across all its token types
/// (`maxConcurrentSigns`), because IAM's quota and the connections to it belong to the provider's credentials, not
/// to a type, and a call waits here up to its own deadline. Folding it into the guard would change what
/// `maxConcurrentCalls` means for every backend.
final class SigningSlots: Sendable {
    private struct State {
        var free: Int
        var waiters: [(id: Int, continuation: CheckedContinuation<Bool, Never>, timer: Task<Void, Never>)] = []
        var nextID = 0
    }

    private let state: Mutex<State>

    init(limit: Int) {
        state = Mutex(State(free: limit))
    }

    /// Takes a slot, waiting until `deadline` at most; false when the deadline passed first (or the task was
    /// cancelled). A true answer must be followed by ``release()``.
    func acquire(before deadline: ContinuousClock.Instant) async -> Bool {
        let taken = state.withLock { state -> Bool in
            guard state.free > 0 else { return false }
            state.free -= 1
            return true
        }
        if taken { return true }
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let timer = Task {
                    guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
                    self.giveUp(id)
                }
                let queued = state.withLock { state -> Bool in
                    // A slot may have come free since the first look.
                    if state.free > 0 {
                        state.free -= 1
                        return false
                    }
                    state.waiters.append((id, continuation, timer))
                    return true
                }
                guard queued else {
                    timer.cancel()
                    return continuation.resume(returning: true)
                }
            }
        } onCancel: {
            giveUp(id)
        }
    }

    /// Hands the slot to the longest waiter, or frees it.
    func release() {
        let next = state.withLock { state -> (id: Int, continuation: CheckedContinuation<Bool, Never>, timer: Task<Void, Never>)? in
            guard !state.waiters.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.timer.cancel()
        next?.continuation.resume(returning: true)
    }

    private func giveUp(_ id: Int) {
        let waiter = state.withLock { state -> (id: Int, continuation: CheckedContinuation<Bool, Never>, timer: Task<Void, Never>)? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        waiter?.timer.cancel()
        waiter?.continuation.resume(returning: false)
    }
}
