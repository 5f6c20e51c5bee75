import Synchronization

/// What an authorizer said about one caller and context.
enum AuthorizerVerdict: Sendable, Equatable {
    /// `200 {"allowed": true}`; with `"until": <epoch seconds>`, the latest `exp` a token for the context may carry
    /// (the trip's scheduled end).
    case allowed(until: Int64?)
    /// `200 {"allowed": false}`, `403` or `404`; `why` is for the log.
    case denied(why: String)
    /// No usable answer (timeout, connection error, another status, a bad body); never cached.
    case unavailable(why: String)

    /// The metric label of an answer that came from a call.
    var outcome: ProviderMetrics.AuthorizerOutcome {
        switch self {
        case .allowed: .allowed
        case .denied: .denied
        case .unavailable: .error
        }
    }
}

/// One provider's authorizer answers, yes and no alike, per (client, subject, context), each for its client's
/// `cacheFor` (monotonic time, so a wall-clock step neither extends nor cuts it); LRU-bounded.
///
/// Concurrent questions with one key share one call (single flight): the first starts it in an unstructured task of
/// its own, so no caller's cancellation reaches it, and the others await that task. A waiter waits at most the
/// call's deadline (the authorizer's `timeout`, at most 10 s). An unusable answer is handed to the waiters of that
/// call and never cached, so the next question asks again.
///
/// A hit is one lock, one hash lookup and an LRU touch: no actor on the request path.
final class AuthorizerDecisionCache: Sendable {
    struct Key: Hashable, Sendable {
        var client: String
        var subject: String
        var context: TokenContext
    }

    /// How ``verdict(for:cacheFor:ask:)`` produced its answer.
    enum Source: Sendable, Equatable {
        /// A cached answer.
        case cache
        /// A call this question started.
        case call
        /// A call another question with the same key had started.
        case sharedCall
    }

    private struct Entry: Sendable {
        var verdict: AuthorizerVerdict
        var expiresAt: UInt64
    }

    private struct Flight: Sendable {
        var id: UInt64
        var task: Task<AuthorizerVerdict, Never>
        /// Questions that joined the call after the one that started it.
        var joined = 0
    }

    private struct State: Sendable {
        var entries: LRUTable<Key, Entry>
        var flights: [Key: Flight] = [:]
        var nextFlightID: UInt64 = 0
    }

    private enum Lookup {
        case cached(AuthorizerVerdict)
        case flight(Task<AuthorizerVerdict, Never>, started: Bool)
    }

    private let clock: TokenGateClock
    private let state: Mutex<State>

    /// The most answers kept per provider when none is given.
    static let defaultMaxEntries = 100_000

    init(clock: TokenGateClock, maxEntries: Int = defaultMaxEntries) {
        self.clock = clock
        state = Mutex(State(entries: LRUTable(capacity: maxEntries)))
    }

    /// The cached answer for `key` while it is younger than `cacheFor`, else the answer of one call to `ask`
    /// (shared with concurrent questions for `key`), cached for `cacheFor` when it is a yes or a no.
    func verdict(
        for key: Key, cacheFor: Duration, ask: @escaping @Sendable () async -> AuthorizerVerdict
    ) async -> (verdict: AuthorizerVerdict, source: Source) {
        let now = clock.monotonicNanoseconds()
        let ttl = TokenGateClock.nanoseconds(cacheFor)
        let lookup = state.withLock { state -> Lookup in
            if let slot = state.entries.slot(for: key) {
                let entry = state.entries[slot]
                if now < entry.expiresAt {
                    state.entries.touch(slot)
                    return .cached(entry.verdict)
                }
                state.entries.remove(slot: slot)
            }
            if let flight = state.flights[key] {
                state.flights[key]?.joined += 1
                return .flight(flight.task, started: false)
            }
            state.nextFlightID &+= 1
            let id = state.nextFlightID
            // Made under the lock so the flight is registered before anyone else looks; the task's own first use of
            // the lock comes after the call (in `fly`), so it can only ever wait for this closure to end.
            let task = Task { await self.fly(key, id: id, ttl: ttl, ask: ask) }
            state.flights[key] = Flight(id: id, task: task)
            return .flight(task, started: true)
        }
        switch lookup {
        case .cached(let verdict):
            return (verdict, .cache)
        case .flight(let task, let started):
            return (await task.value, started ? .call : .sharedCall)
        }
    }

    /// The number of answers cached (calls in flight are not counted).
    var count: Int { state.withLock { $0.entries.count } }

    /// How many questions joined the call in flight for `key`; lets tests line callers up without sleeping.
    func joinedCount(for key: Key) -> Int { state.withLock { $0.flights[key]?.joined ?? 0 } }

    private func fly(
        _ key: Key, id: UInt64, ttl: UInt64, ask: @Sendable () async -> AuthorizerVerdict
    ) async -> AuthorizerVerdict {
        let verdict = await ask()
        let now = clock.monotonicNanoseconds()
        state.withLock { state in
            if state.flights[key]?.id == id { state.flights.removeValue(forKey: key) }
            guard ttl > 0, verdict.isCacheable else { return }
            let (expiresAt, overflow) = now.addingReportingOverflow(ttl)
            let entry = Entry(verdict: verdict, expiresAt: overflow ? .max : expiresAt)
            // Through the bound: a full table evicts its least recently used answer.
            if let slot = state.entries.slot(for: key) { state.entries[slot] = entry } else { state.entries.insert(key, entry) }
        }
        return verdict
    }
}

extension AuthorizerVerdict {
    /// Yes and no are cached; "could not tell" never is.
    fileprivate var isCacheable: Bool {
        if case .unavailable = self { false } else { true }
    }
}
