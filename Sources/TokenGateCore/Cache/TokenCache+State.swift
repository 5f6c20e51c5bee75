// The cache's state machine. Everything here runs under the cache's Mutex: no awaits, no clock reads, no resumes.

extension TokenCache {
    typealias Waiter = CheckedContinuation<(value: Value, outcome: TokenCacheOutcome), any Error>

    /// The policy in the units the state compares: wall seconds and monotonic nanoseconds.
    struct Limits: Sendable {
        let minRemaining: Int64
        /// Entries with less than `minRemaining` but at least this left are kept as the answer to a failed fetch.
        let staleFloor: Int64
        let refreshBefore: Int64
        let refreshRetryInterval: UInt64
        /// The most an entry's refresh is delayed, in seconds: at most the window between the two thresholds.
        let maxRefreshDelay: Int64

        init(_ policy: TokenCachePolicy) {
            minRemaining = TokenGateClock.secondsRoundingUp(policy.minRemaining)
            staleFloor = min(minRemaining, TokenGateClock.secondsRoundingUp(policy.staleIfErrorFloor))
            refreshBefore = max(minRemaining, TokenGateClock.secondsRoundingUp(policy.refreshBefore))
            refreshRetryInterval = TokenGateClock.nanoseconds(policy.refreshRetryInterval)
            maxRefreshDelay = max(0, min(policy.refreshJitter.components.seconds, refreshBefore - minRemaining))
        }

        /// This entry's refresh threshold: `refreshBefore`, less a random delay when jitter is on.
        func refreshThreshold() -> Int64 {
            maxRefreshDelay == 0 ? refreshBefore : refreshBefore - Int64.random(in: 0...maxRefreshDelay)
        }

        /// Seconds left before `expiresAt`, saturating: a hostile `exp` must not trap.
        static func remaining(_ expiresAt: Int64, at wall: Int64) -> Int64 {
            let (difference, overflow) = expiresAt.subtractingReportingOverflow(wall)
            guard overflow else { return difference }
            return expiresAt > wall ? .max : .min
        }

        /// `monotonic` plus the retry interval, saturating.
        func nextRefresh(after monotonic: UInt64) -> UInt64 {
            let (sum, overflow) = monotonic.addingReportingOverflow(refreshRetryInterval)
            return overflow ? .max : sum
        }
    }

    struct Entry: Sendable {
        var value: Value
        /// Whether the last background refresh failed; only reported in ``TokenCacheOutcome``. Declared right after
        /// `value`, so it can take the value's tail padding: a cache holds 100,000 entries.
        var lastRefreshFailed = false
        /// Fewer seconds left than this start a background refresh (``Limits/refreshThreshold()``).
        var refreshBefore: Int64
        /// No background refresh starts before this monotonic time.
        var refreshNotBefore: UInt64 = 0
    }

    /// The one fetch in flight for a key, and the callers waiting on it.
    struct Flight: Sendable {
        let id: UInt64
        /// False once the key was removed: the fetched value must not bring the entry back.
        var storesResult = true
        var waiters: [UInt64: Waiter] = [:]
    }

    enum Decision: Sendable {
        /// Return this value, no fetch needed.
        case served(Value, TokenCacheOutcome)
        /// Return this value and start the background refresh registered as `flightID`.
        case refreshStarted(Value, flightID: UInt64)
        /// Nothing usable is cached (fast path only: the slow path registers a waiter instead).
        case absent
        /// A value is cached, but serving it starts a background refresh, which the caller did not allow.
        case refreshDue
        /// The waiter joined a fetch already in flight.
        case waiting
        /// The waiter was registered on a new flight; start its fetch.
        case fetchStarted(flightID: UInt64)
        /// The calling task was cancelled before it could be registered.
        case cancelled
    }

    struct State: Sendable {
        var entries: LRUTable<Key, Entry>
        var flights: [Key: Flight] = [:]
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        private var nextFlightID: UInt64 = 0

        init(capacity: Int) {
            entries = LRUTable(capacity: capacity, reservingCapacity: true)
        }

        /// The fast path: serve from the cache if possible, starting a background refresh inside the window (only
        /// when `mayStartRefresh`, else that value is `refreshDue`). A value expiring after `notAfter` is absent
        /// to this caller, and stays for the others until a fetch replaces it.
        mutating func lookup(
            _ key: Key, wall: Int64, monotonic: UInt64, limits: Limits, mayStartRefresh: Bool = true, notAfter: Int64? = nil
        ) -> Decision {
            guard let slot = entries.slot(for: key) else { return .absent }
            let entry = entries[slot]
            if let notAfter, entry.value.expiresAt > notAfter { return .absent }
            let remaining = Limits.remaining(entry.value.expiresAt, at: wall)
            guard remaining >= limits.minRemaining else {
                guard remaining >= limits.staleFloor else {
                    // Never servable again (wall time moves forward): free the slot now.
                    entries.remove(slot: slot)
                    return .absent
                }
                // Kept only as the answer to a failed fetch; served at once while the last fetch failed recently.
                if entry.lastRefreshFailed, monotonic < entry.refreshNotBefore {
                    entries.touch(slot)
                    return .served(entry.value, .servedAfterRefreshFailure)
                }
                return .absent
            }
            entries.touch(slot)
            if remaining >= entry.refreshBefore { return .served(entry.value, .hit) }
            if flights[key] != nil { return .served(entry.value, .refreshingAhead) }
            if monotonic < entry.refreshNotBefore {
                return .served(entry.value, entry.lastRefreshFailed ? .servedAfterRefreshFailure : .hit)
            }
            guard mayStartRefresh else { return .refreshDue }
            return .refreshStarted(entry.value, flightID: startFlight(for: key))
        }

        /// The slow path: serve if the cache can (another fetch may have finished since the fast path), else
        /// register `waiter` on the key's flight, creating it if needed.
        mutating func join(
            _ key: Key, waiterID: UInt64, waiter: Waiter, isCancelled: Bool,
            wall: Int64, monotonic: UInt64, limits: Limits, notAfter: Int64?
        ) -> Decision {
            let decision = lookup(key, wall: wall, monotonic: monotonic, limits: limits, notAfter: notAfter)
            guard case .absent = decision else { return decision }
            guard !isCancelled else { return .cancelled }
            if flights[key] != nil {
                flights[key]?.waiters[waiterID] = waiter
                return .waiting
            }
            let flightID = startFlight(for: key)
            flights[key]?.waiters[waiterID] = waiter
            return .fetchStarted(flightID: flightID)
        }

        /// Ends the flight: caches a usable value, or marks a failed refresh, and hands back who to resume and with
        /// what: the fetched value, the error, or (a fetch failed) a stale value still above the floor.
        mutating func finish(
            _ key: Key, flightID: UInt64, result: Result<Value, any Error>,
            wall: Int64, monotonic: UInt64, limits: Limits
        ) -> (
            waiters: [Waiter], answer: Result<(value: Value, outcome: TokenCacheOutcome), any Error>, idleWaiters: [CheckedContinuation<Void, Never>]
        ) {
            guard let flight = flights[key], flight.id == flightID else {
                assertionFailure("a flight ended twice or was replaced")
                return ([], result.map { ($0, .miss) }, [])
            }
            var answer = result.map { (value: $0, outcome: TokenCacheOutcome.miss) }
            flights.removeValue(forKey: key)
            switch result {
            case .success(let value):
                let remaining = Limits.remaining(value.expiresAt, at: wall)
                if flight.storesResult && remaining >= limits.minRemaining {
                    // A value already inside the refresh window (a short-lived token) would otherwise trigger a
                    // refresh on every request: hold the next one back as after a failure.
                    var entry = Entry(value: value, refreshBefore: limits.refreshThreshold())
                    if remaining < limits.refreshBefore {
                        entry.refreshNotBefore = limits.nextRefresh(after: monotonic)
                    }
                    // Insertion goes through the bound: if the key was evicted meanwhile, the LRU entry makes room.
                    if let slot = entries.slot(for: key) { entries[slot] = entry } else { entries.insert(key, entry) }
                }
            case .failure:
                // A failed refresh-ahead, or a fetch for an entry below `minRemaining` kept above the floor: the
                // entry keeps serving until the retry interval passes, and answers this fetch's waiters.
                if let slot = entries.slot(for: key) {
                    entries[slot].refreshNotBefore = limits.nextRefresh(after: monotonic)
                    entries[slot].lastRefreshFailed = true
                    let entry = entries[slot]
                    if flight.storesResult, Limits.remaining(entry.value.expiresAt, at: wall) >= limits.staleFloor {
                        answer = .success((entry.value, .servedAfterRefreshFailure))
                    }
                }
            }
            var idleWaiters: [CheckedContinuation<Void, Never>] = []
            if flights.isEmpty { swap(&idleWaiters, &self.idleWaiters) }
            return (Array(flight.waiters.values), answer, idleWaiters)
        }

        private mutating func startFlight(for key: Key) -> UInt64 {
            nextFlightID &+= 1
            flights[key] = Flight(id: nextFlightID)
            return nextFlightID
        }
    }
}
