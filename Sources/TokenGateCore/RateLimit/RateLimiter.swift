import Synchronization

/// A per-key rate limiter (GCRA, the generic cell rate algorithm) with bounded memory.
///
/// Each key keeps one number, its theoretical arrival time (TAT): when its bucket would be full again. A request
/// at `now` is allowed if `TAT - now` is at most `(burst - 1)` emission intervals, and then moves TAT one interval
/// on; so `burst` requests pass back to back, then one per interval.
///
/// ```swift
/// let limiter = RateLimiter<ProviderID>(limit: RateLimit(count: 600, per: .seconds(60), burst: 50))
/// if case .limited = limiter.acquire(provider) { /* 429 with Retry-After: decision.retryAfterSeconds */ }
/// ```
///
/// **Memory.** A bucket whose TAT has passed behaves exactly like a new one, so it is dropped. Buckets are kept
/// in least-recently-used order; each `acquire` drops up to 32 idle buckets from the old
/// end (amortised O(1), no periodic full scans under the lock), and ``removeIdleBuckets()`` sweeps them all.
/// Beyond `maxKeys` the least recently used bucket is dropped even if not idle: that key only gets a fresh burst,
/// whereas refusing new keys would let one client with many keys lock everyone else out.
package final class RateLimiter<Key: Hashable & Sendable>: Sendable {
    /// The limit applied to every key.
    package let limit: RateLimit
    /// The most buckets kept.
    package let maxKeys: Int
    /// How many idle buckets one `acquire` may drop: bounds its time under the lock.
    static var idleEvictionsPerAcquire: Int { 32 }

    private let clock: TokenGateClock
    private let emissionInterval: UInt64
    private let tolerance: UInt64  // (burst - 1) emission intervals
    private let buckets: Mutex<LRUTable<Key, UInt64>>  // key → TAT, monotonic nanoseconds

    /// A limiter with no buckets. `maxKeys` must be at least 1.
    package init(limit: RateLimit, maxKeys: Int = 100_000, clock: TokenGateClock = .system) {
        precondition(maxKeys > 0, "RateLimiter.maxKeys must be at least 1")
        self.limit = limit
        self.maxKeys = maxKeys
        self.clock = clock
        emissionInterval = limit.emissionInterval
        let (tolerance, overflow) = emissionInterval.multipliedReportingOverflow(by: UInt64(limit.burst - 1))
        self.tolerance = overflow ? .max : tolerance
        buckets = Mutex(LRUTable(capacity: maxKeys))
    }

    /// Takes one request's worth from `key`'s bucket, or says how long until one is available.
    package func acquire(_ key: Key) -> RateLimitDecision { acquireMeasured(key).decision }

    /// ``acquire(_:)``, and what is left in `key`'s bucket afterwards (for the `RateLimit` response header).
    package func acquireMeasured(_ key: Key) -> RateLimitQuota {
        let now = clock.monotonicNanoseconds()
        return buckets.withLock { buckets in
            Self.removeOldestIdle(from: &buckets, at: now, upTo: Self.idleEvictionsPerAcquire)
            guard let slot = buckets.slot(for: key) else {
                // A new bucket is full: this request passes and takes one interval.
                let arrival = Self.adding(now, emissionInterval)
                buckets.insert(key, arrival)
                return quota(.allowed, fullAt: arrival, now: now)
            }
            buckets.touch(slot)
            let arrival = max(buckets[slot], now)
            let wait = arrival - now
            guard wait <= tolerance else {
                return quota(.limited(retryAfter: .nanoseconds(Int64(clamping: wait - tolerance))), fullAt: arrival, now: now)
            }
            buckets[slot] = Self.adding(arrival, emissionInterval)
            return quota(.allowed, fullAt: buckets[slot], now: now)
        }
    }

    /// A bucket full again at `fullAt` holds as many requests as fit in the tolerance still free, plus one.
    private func quota(_ decision: RateLimitDecision, fullAt: UInt64, now: UInt64) -> RateLimitQuota {
        let used = fullAt - now
        let remaining = used > tolerance + emissionInterval ? 0 : Int((tolerance + emissionInterval - used) / emissionInterval)
        return RateLimitQuota(decision: decision, remaining: min(remaining, limit.burst), resetNanoseconds: used)
    }

    /// Whether `key` could take a request now, without taking it: for limits that are charged only when something
    /// goes wrong (failed authentications), and looked at before the work that may go wrong.
    package func peek(_ key: Key) -> RateLimitDecision {
        let now = clock.monotonicNanoseconds()
        return buckets.withLock { buckets in
            guard let slot = buckets.slot(for: key) else { return .allowed }
            let wait = max(buckets[slot], now) - now
            return wait <= tolerance ? .allowed : .limited(retryAfter: .nanoseconds(Int64(clamping: wait - tolerance)))
        }
    }

    /// Whether `key` was charged recently: its bucket has not filled up again yet.
    package func isCharged(_ key: Key) -> Bool {
        let now = clock.monotonicNanoseconds()
        return buckets.withLock { buckets in buckets.slot(for: key).map { buckets[$0] > now } ?? false }
    }

    /// The number of keys with a bucket; idle ones count until they are dropped.
    package var trackedKeyCount: Int { buckets.withLock { $0.count } }

    /// Drops every idle bucket now, in O(tracked keys); returns how many. Optional: `acquire` drops them too.
    @discardableResult
    package func removeIdleBuckets() -> Int {
        let now = clock.monotonicNanoseconds()
        return buckets.withLock { buckets in
            var removed = 0
            for key in buckets.keysByRecency {
                guard let slot = buckets.slot(for: key), buckets[slot] <= now else { continue }
                buckets.remove(slot: slot)
                removed += 1
            }
            return removed
        }
    }

    /// Drops idle buckets from the least recently used end, stopping at the first busy one: a bucket last used
    /// at time t is idle by t + burst intervals, so the ones behind it follow soon after.
    private static func removeOldestIdle(from buckets: inout LRUTable<Key, UInt64>, at now: UInt64, upTo limit: Int) {
        var removed = 0
        while removed < limit, let slot = buckets.oldestSlot, buckets[slot] <= now {
            buckets.remove(slot: slot)
            removed += 1
        }
    }

    private static func adding(_ time: UInt64, _ interval: UInt64) -> UInt64 {
        let (sum, overflow) = time.addingReportingOverflow(interval)
        return overflow ? .max : sum
    }
}
