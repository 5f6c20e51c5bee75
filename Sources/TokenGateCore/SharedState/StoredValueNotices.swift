import Synchronization

/// Wakes a replica waiting for another's mint as soon as the token is stored: the store tells every replica which
/// key got a value, and the value (a Redis pub/sub message), and each waiter of that key here is signalled with it.
/// A waiter also wakes after its timeout, so a message lost (or a subscription down) costs one polling interval,
/// never a request.
final class StoredValueNotices: Sendable {
    /// One waiter's notice: signalled once, waited on once.
    final class Notice: Sendable {
        fileprivate let key: String
        fileprivate let id: UInt64
        private let state = Mutex<(signalled: Bool, value: [UInt8]?, waiter: CheckedContinuation<Void, Never>?)>((false, nil, nil))

        /// The value the store's message carried, once signalled with one.
        var value: [UInt8]? { state.withLock { $0.value } }

        fileprivate init(key: String, id: UInt64) {
            self.key = key
            self.id = id
        }

        fileprivate func signal(value: [UInt8]? = nil) {
            let waiter = state.withLock { state in
                state.signalled = true
                if let value { state.value = value }
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }

        /// Returns when signalled (also before this call), or after `timeout`.
        func wait(upTo timeout: Duration) async {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.signalled() }
                group.addTask { try? await Task.sleep(for: timeout) }
                await group.next()
                group.cancelAll()
            }
        }

        private func signalled() async {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state in
                        if state.signalled { return true }
                        state.waiter = waiter
                        return false
                    }
                    if resumeNow { waiter.resume() }
                }
            } onCancel: {
                // Signalling on cancellation ends the wait; the notice is not used again.
                signal()
            }
        }
    }

    private let waiters = Mutex<[String: [UInt64: Notice]]>([:])
    private let nextID = Atomic<UInt64>(0)

    /// A notice for the next value stored at `key`: register before looking, so a value stored after the look is
    /// not missed. Every notice registered must be unregistered.
    func register(_ key: String) -> Notice {
        let notice = Notice(key: key, id: nextID.wrappingAdd(1, ordering: .relaxed).oldValue)
        waiters.withLock { $0[key, default: [:]][notice.id] = notice }
        return notice
    }

    func unregister(_ notice: Notice) {
        waiters.withLock { waiters in
            waiters[notice.key]?.removeValue(forKey: notice.id)
            if waiters[notice.key]?.isEmpty == true { waiters.removeValue(forKey: notice.key) }
        }
    }

    /// A value was stored at `key` (`value`, when the message carried it): signals every waiter of it.
    func notify(_ key: String, value: [UInt8]? = nil) {
        let notices = waiters.withLock { $0[key].map { Array($0.values) } ?? [] }
        for notice in notices { notice.signal(value: value) }
    }

    /// How many waiters are registered (for tests).
    var waiterCount: Int { waiters.withLock { $0.values.reduce(0) { $0 + $1.count } } }
}
