import Synchronization

/// A per-context token cache: single-flight fetches, refresh-ahead, LRU-bounded, safe to call from any task.
///
/// A request is served from the cache while the cached value has at least ``TokenCachePolicy/minRemaining`` left.
/// Inside the refresh window (less than ``TokenCachePolicy/refreshBefore`` left) the request still gets the cached
/// value and starts one background refresh for that key. Otherwise the request waits for a fetch; concurrent
/// requests for one key share a single fetch and its value or error. Errors are never cached; when a fetch fails
/// and the cached value still has ``TokenCachePolicy/staleIfErrorFloor`` left, its waiters get that value instead
/// (`stale`), and so does every request until the retry interval has passed.
///
/// ```swift
/// let cache = TokenCache<TokenContext, DeliveredToken>(policy: TokenCachePolicy())
/// let (token, outcome) = try await cache.value(for: context) { try await mintAndVerify(context) }
/// ```
///
/// A hit takes the lock, looks the key up, moves it to the front of the LRU list and unlocks; it does no other work
/// and no allocation in the cache. Fetches run in their own unstructured task, started by the request that
/// needs one (never by an initialiser), so a cancelled caller detaches without cancelling the fetch for the
/// others; that task prefers the executor the caller named in ``TokenCacheFetches/executor``, if any. A fetch
/// must end by itself (backends give every call a deadline): its waiters wait until it does.
package final class TokenCache<Key: Hashable & Sendable, Value: Expiring>: Sendable {
    /// The policy this cache was created with.
    package let policy: TokenCachePolicy
    private let clock: TokenGateClock
    private let limits: Limits
    private let state: Mutex<State>
    private let nextWaiterID = Atomic<UInt64>(0)

    /// An empty cache. `policy.maxEntries` must be at least 1.
    package init(policy: TokenCachePolicy = TokenCachePolicy(), clock: TokenGateClock = .system) {
        precondition(policy.maxEntries > 0, "TokenCachePolicy.maxEntries must be at least 1")
        self.policy = policy
        self.clock = clock
        self.limits = Limits(policy)
        self.state = Mutex(State(capacity: policy.maxEntries))
    }

    /// The value for `key`: cached if it has at least ``TokenCachePolicy/minRemaining`` left, else fetched.
    ///
    /// - Parameters:
    ///   - key: the context the value is for.
    ///   - notAfter: when given, a cached value expiring later is not served: this caller's fetch replaces it. A
    ///     fetch already in flight is joined whatever its bound, so its value may expire later (the caller checks).
    ///   - fetch: produces a fresh value for `key`. It runs in a task of its own and may be shared by
    ///     concurrent callers, so it must not depend on which caller started it. A fetched value with less than
    ///     `minRemaining` left is returned to the callers that waited for it, but not cached.
    /// - Returns: the value and how it was obtained.
    /// - Throws: the fetch's error, shared by all callers waiting on that fetch; `CancellationError` if the
    ///   calling task is cancelled while waiting (the fetch continues for the others).
    package func value(
        for key: Key, notAfter: Int64? = nil,
        fetch: @escaping @Sendable () async throws -> Value
    ) async throws -> (value: Value, outcome: TokenCacheOutcome) {
        let wall = clock.wallSeconds()
        let monotonic = clock.monotonicNanoseconds()
        let decision = state.withLock { $0.lookup(key, wall: wall, monotonic: monotonic, limits: limits, notAfter: notAfter) }
        switch decision {
        case .served(let value, let outcome):
            return (value, outcome)
        case .refreshStarted(let value, let flightID):
            startFetch(for: key, flightID: flightID, fetch: fetch)
            return (value, .refreshingAhead)
        case .absent, .refreshDue, .waiting, .fetchStarted, .cancelled:
            return try await awaitFetch(for: key, notAfter: notAfter, fetch: fetch)
        }
    }

    /// The value for `key` when serving it needs no fetch and starts none: a hit, or a value whose refresh is in
    /// flight or held back after a failure. Nil when ``value(for:notAfter:fetch:)`` would fetch, wait, or start a refresh.
    ///
    /// The same lookup as `value(for:fetch:)` (a hit is touched in the LRU order), but it starts nothing, so a
    /// caller can look before it commits to an answer (the event loop's answer to a cached hit charges the rate
    /// limits after this, and hands anything else to the full path uncharged).
    package func servableValue(for key: Key) -> (value: Value, outcome: TokenCacheOutcome)? {
        let wall = clock.wallSeconds()
        let monotonic = clock.monotonicNanoseconds()
        let decision = state.withLock { $0.lookup(key, wall: wall, monotonic: monotonic, limits: limits, mayStartRefresh: false) }
        guard case .served(let value, let outcome) = decision else { return nil }
        return (value, outcome)
    }

    /// The number of cached entries (fetches in flight are not counted).
    package var count: Int { state.withLock { $0.entries.count } }

    /// Forgets every value whose key `matches`, and keeps fetches in flight for such keys from caching their result;
    /// returns the keys whose values were forgotten. A scan of the table: for rare operator actions, not requests.
    @discardableResult
    package func removeValues(where matches: (Key) -> Bool) -> [Key] {
        state.withLock { state in
            let doomed = state.entries.keysByRecency.filter(matches)
            for key in doomed { state.entries.removeValue(for: key) }
            for index in state.flights.indices where matches(state.flights.keys[index]) {
                state.flights.values[index].storesResult = false
            }
            return doomed
        }
    }

    /// Forgets the values of exactly `keys` (a lookup each, no scan), and keeps fetches in flight for them from
    /// caching their result; returns the keys whose values were forgotten.
    @discardableResult
    package func removeValues(for keys: [Key]) -> [Key] {
        state.withLock { state in
            var removed: [Key] = []
            for key in keys {
                if state.entries.slot(for: key) != nil {
                    state.entries.removeValue(for: key)
                    removed.append(key)
                }
                state.flights[key]?.storesResult = false
            }
            return removed
        }
    }

    /// Returns once no fetch is in flight, foreground or background; for tests and orderly shutdown.
    ///
    /// Fetches started before it returns are waited for too. Not cancellable: it waits for fetches to end.
    package func waitForRefreshes() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isIdle = state.withLock { state in
                guard !state.flights.isEmpty else { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if isIdle { continuation.resume() }
        }
    }

    /// How many callers wait on the fetch for `key`; lets tests line callers up without sleeping.
    func waiterCount(for key: Key) -> Int {
        state.withLock { $0.flights[key]?.waiters.count ?? 0 }
    }

    /// The slow path: join the fetch for `key`, or start it, then wait unless the calling task is cancelled.
    private func awaitFetch(
        for key: Key, notAfter: Int64?,
        fetch: @escaping @Sendable () async throws -> Value
    ) async throws -> (value: Value, outcome: TokenCacheOutcome) {
        let waiterID = nextWaiterID.wrappingAdd(1, ordering: .relaxed).oldValue
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: Waiter) in
                let wall = clock.wallSeconds()
                let monotonic = clock.monotonicNanoseconds()
                // `Task.isCancelled` is read under the lock: the cancellation handler takes the same lock, so
                // either it finds this waiter registered or the waiter sees the cancellation here.
                let decision = state.withLock { state in
                    state.join(
                        key, waiterID: waiterID, waiter: waiter, isCancelled: Task.isCancelled,
                        wall: wall, monotonic: monotonic, limits: limits, notAfter: notAfter)
                }
                switch decision {
                case .served(let value, let outcome):
                    waiter.resume(returning: (value, outcome))
                case .refreshStarted(let value, let flightID):
                    startFetch(for: key, flightID: flightID, fetch: fetch)
                    waiter.resume(returning: (value, .refreshingAhead))
                case .fetchStarted(let flightID):
                    startFetch(for: key, flightID: flightID, fetch: fetch)
                case .waiting, .absent, .refreshDue:
                    break
                case .cancelled:
                    waiter.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            // Detach this waiter only; the fetch and the other waiters carry on.
            let waiter = state.withLock { $0.flights[key]?.waiters.removeValue(forKey: waiterID) }
            waiter?.resume(throwing: CancellationError())
        }
    }

    private func startFetch(for key: Key, flightID: UInt64, fetch: @escaping @Sendable () async throws -> Value) {
        // Unstructured on purpose: the fetch belongs to every waiter, so no caller's cancellation may reach it.
        Task(executorPreference: TokenCacheFetches.executor) {
            let result: Result<Value, any Error>
            do {
                result = .success(try await fetch())
            } catch {
                result = .failure(error)
            }
            self.finishFetch(for: key, flightID: flightID, result: result)
        }
    }

    private func finishFetch(for key: Key, flightID: UInt64, result: Result<Value, any Error>) {
        let wall = clock.wallSeconds()
        let monotonic = clock.monotonicNanoseconds()
        let (waiters, answer, idleWaiters) = state.withLock { state in
            state.finish(key, flightID: flightID, result: result, wall: wall, monotonic: monotonic, limits: limits)
        }
        // Resumed outside the lock: a resumed task may call straight back into the cache.
        for waiter in waiters { waiter.resume(with: answer) }
        for idleWaiter in idleWaiters { idleWaiter.resume() }
    }
}
