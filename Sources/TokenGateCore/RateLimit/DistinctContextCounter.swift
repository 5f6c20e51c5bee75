import Synchronization

/// Counts, in this process, the different contexts each caller obtained tokens for in the current window of
/// each of a provider's ``DistinctContextLimits``, and refuses a new one past a cap.
///
/// A caller's counter holds the contexts' hashes (this process's seeded `Hasher`: a collision would need 2^64
/// luck), at most the cap's count of them, since a context past the cap is refused and not added. Counters are
/// kept for at most `maxCallers` callers, least recently used first out: a caller pushed out only starts afresh,
/// as a rate limiter's bucket does.
final class DistinctContextCounter: Sendable {
    /// What one check decided.
    enum Decision: Equatable {
        /// Counted now, or already counted in this window.
        case allowed
        /// New, and the cap of this scope (`all` or a token type) is reached until the window ends.
        case refused(scope: String, retryAfterSeconds: Int64)
    }

    private struct Key: Hashable {
        var caller: AuthenticatedCaller
        /// `all`, or the token type a per-type cap counts.
        var scope: String
    }

    private struct Window {
        var index: Int64
        var members: Set<Int>
    }

    let limits: DistinctContextLimits
    private let clock: TokenGateClock
    private let counters: Mutex<LRUTable<Key, Window>>

    init(_ limits: DistinctContextLimits, clock: TokenGateClock, maxCallers: Int = 100_000) {
        self.limits = limits
        self.clock = clock
        counters = Mutex(LRUTable(capacity: maxCallers))
    }

    /// Counts `context` for `caller` in every cap of its type, unless one of them refuses it (then none counts it).
    func admit(_ context: TokenContext, for caller: AuthenticatedCaller) -> Decision {
        let caps = limits.caps(for: context.tokenType)
        guard !caps.isEmpty else { return .allowed }
        let now = clock.wallSeconds()
        let member = context.hashValue
        return counters.withLock { counters in
            var toCount: [(Key, Int64)] = []
            for (scope, cap) in caps {
                let key = Key(caller: caller, scope: scope)
                let window = cap.window(at: now)
                guard let slot = counters.slot(for: key), counters[slot].index == window.index else {
                    toCount.append((key, window.index))
                    continue
                }
                let counted = counters[slot].members
                if counted.contains(member) { continue }
                if counted.count >= cap.count { return .refused(scope: scope, retryAfterSeconds: window.secondsLeft) }
                toCount.append((key, window.index))
            }
            for (key, index) in toCount {
                if let slot = counters.slot(for: key), counters[slot].index == index {
                    counters[slot].members.insert(member)
                    counters.touch(slot)
                } else {
                    counters.removeValue(for: key)
                    counters.insert(key, Window(index: index, members: [member]))
                }
            }
            return .allowed
        }
    }

    /// Callers with a counter (those of past windows count until they are replaced or pushed out).
    var trackedCallers: Int { counters.withLock { $0.count } }
}
