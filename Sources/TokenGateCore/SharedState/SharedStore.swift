/// What the gateway needs from a store several replicas share. Redis implements it (the `TokenGateRedis`
/// module); with no `sharedState:` there is none and every replica keeps its state in process.
///
/// Every call either answers within the store's deadline or throws; the caller (``SharedState``) turns a throw
/// into its local fallback. Nothing read from the store is trusted: values are sealed and tokens verified again.
package protocol SharedStore: Sendable {
    /// The bytes at `key`, or nil when there are none.
    func value(at key: String) async throws -> [UInt8]?
    /// Stores `value` at `key` for `lifetime`, and tells every replica watching (``watch(subscribed:ended:stored:)``)
    /// that `key` has a new value. With a `lock`: only while its owner holds it, and releasing it, all in one step (a
    /// replica refused the lock meanwhile is sure to be told of the value); false when the lock was not held and
    /// nothing was stored.
    @discardableResult
    func setValue(_ value: [UInt8], at key: String, lifetime: Duration, releasing lock: SharedLockHold?) async throws -> Bool
    /// Deletes the values at `keys` (those that exist).
    func removeValues(at keys: [String]) async throws
    /// Takes the lock `key` for `owner` when nobody holds it (it lapses after `lifetime`); whether it was taken.
    func lock(_ key: String, owner: String, lifetime: Duration) async throws -> Bool
    /// The value at `key` when there is one; else takes `lock` (it lapses after `lifetime`) when nobody holds it.
    /// One step: a replica that takes the lock knows no value was stored before. With `ended`, the key of the ended
    /// entry of the value's context (same slot): when that entry exists, neither is looked at.
    func value(at key: String, orLock lock: SharedLockHold, lifetime: Duration, ended: String?) async throws -> SharedValueOrLock
    /// Releases the lock `key` if `owner` still holds it (never another holder's lock).
    func unlock(_ key: String, owner: String) async throws
    /// Takes one request from each bucket in order, by GCRA on the store's own clock, stopping at the first that
    /// refuses (the ones before it stay charged, as in process).
    func acquire(_ buckets: [SharedRateBucket]) async throws -> SharedRateOutcome
    /// Adds `member` to every set unless one of them is full without it (then none is changed): the index of the
    /// first set that refused, or nil when `member` is in every set now. A set that gains a member lapses after its
    /// `lifetime`.
    func admit(_ member: String, to sets: [SharedDistinctSet]) async throws -> Int?
    /// Until when the end at `key` holds (epoch seconds), or nil when there is none.
    func endedUntil(at key: String) async throws -> Int64?
    /// Counts `entries` (digests of what one provider stores: its ends, its tokens; each with its until) in `index`,
    /// all or none: unless that would hold more than `capacity` entries that have not expired at `now` (false then,
    /// and nothing changed). Entries leave the count when their `until` passes.
    func admit(_ entries: [(entry: String, until: Int64)], now: Int64, into index: String, capacity: Int) async throws -> Bool
    /// Records each end of `changes` at its key in `keys` (merged with the end it holds: the later time, an operator's
    /// over an event's) until it expires, and tells every replica watching; returns the ends in force, in order.
    func recordEnds(_ changes: [EndedContextChange], at keys: [String]) async throws -> [EndedContexts.Record]
    /// Lifts the end at `key` as `change` says (an event lifts only an end an event made before it), tells every
    /// replica watching when it did, and drops `entry` from `index`.
    func recordLift(_ change: EndedContextChange, at key: String, entry: String, index: String) async throws -> EndedContexts.Lift
    /// Calls `ended` for every change of the ended contexts published, and `stored` with the key and (when the
    /// message carried it) the value of every value stored, by any replica, until the calling task is cancelled.
    /// `subscribed` is called each time the subscription is (re-)established; `interrupted` when a message may have
    /// been missed (the subscription dropped, or messages came faster than they were read), followed by `subscribed`
    /// once every message is received again.
    func watch(
        subscribed: @escaping @Sendable () -> Void, interrupted: @escaping @Sendable () -> Void,
        ended: @escaping @Sendable (EndedContextChange) -> Void, stored: @escaping @Sendable (_ key: String, _ value: [UInt8]?) -> Void
    ) async throws
    /// Closes the store's connections.
    func shutdown() async
    /// Whether ``acquire(_:completion:)``, called now from this thread, answers without a task (Redis: this thread
    /// is an event loop whose connection is open).
    var acquiresWithoutTask: Bool { get }
    /// ``acquire(_:)`` answered through `completion`, once: without a task when ``acquiresWithoutTask`` says so,
    /// from a task otherwise.
    func acquire(_ buckets: [SharedRateBucket], completion: @escaping @Sendable (Result<SharedRateOutcome, any Error>) -> Void)
}

/// What ``SharedStore/value(at:orLock:lifetime:ended:)`` found.
package enum SharedValueOrLock: Sendable, Equatable {
    /// The context has ended (until this time, epoch seconds): neither the value nor the lock was looked at.
    case ended(until: Int64)
    /// The value: the lock was not asked for.
    case value([UInt8])
    /// No value, and the lock is taken now.
    case locked
    /// No value, and another holds the lock.
    case heldByAnother
}

/// A lock and the owner that holds it.
package struct SharedLockHold: Sendable, Hashable {
    package var key: String
    package var owner: String

    package init(key: String, owner: String) {
        self.key = key
        self.owner = owner
    }
}

extension SharedStore {
    /// Stores `value` at `key` for `lifetime`, and tells every replica watching.
    package func setValue(_ value: [UInt8], at key: String, lifetime: Duration) async throws {
        try await setValue(value, at: key, lifetime: lifetime, releasing: nil)
    }

    package var acquiresWithoutTask: Bool { false }

    package func acquire(_ buckets: [SharedRateBucket], completion: @escaping @Sendable (Result<SharedRateOutcome, any Error>) -> Void) {
        Task { completion(await Result { try await acquire(buckets) }) }
    }
}

extension Result where Failure == any Error {
    /// The result of `body`, as ``Result/init(catching:)`` is for a synchronous one.
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}

/// One rate-limit bucket in the shared store: its key and the GCRA parameters, in microseconds.
package struct SharedRateBucket: Sendable, Hashable {
    /// The store key.
    package var key: String
    /// Time between two requests at the sustained rate.
    package var emissionIntervalMicroseconds: Int64
    /// How far ahead of now the bucket may run: `(burst - 1)` intervals.
    package var toleranceMicroseconds: Int64

    /// A bucket for `limit` at `key`.
    package init(key: String, limit: RateLimit) {
        self.key = key
        emissionIntervalMicroseconds = max(1, Int64(clamping: limit.emissionInterval / 1_000))
        toleranceMicroseconds = emissionIntervalMicroseconds * Int64(limit.burst - 1)
    }
}

/// One capped set of distinct members in the shared store (a caller's contexts in one window).
package struct SharedDistinctSet: Sendable, Hashable {
    /// The store key.
    package var key: String
    /// The most members it may hold.
    package var capacity: Int
    /// How long it lives after its last new member: at least the rest of its window.
    package var lifetime: Duration

    /// A set at `key` of at most `capacity` members, kept for `lifetime`.
    package init(key: String, capacity: Int, lifetime: Duration) {
        self.key = key
        self.capacity = capacity
        self.lifetime = lifetime
    }
}

/// What a shared rate-limit check decided.
package enum SharedRateOutcome: Sendable, Equatable {
    /// Every bucket took the request.
    case allowed
    /// The bucket at this index (of those passed) refused; a request may pass after `retryAfter`.
    case limited(index: Int, retryAfter: Duration)
}

/// A context ended or lifted at one replica, by an operator or an event, as the replicas tell each other.
package struct EndedContextChange: Sendable, Hashable {
    /// The ended entity.
    package var key: EndedContexts.Key
    /// Until when it is refused (epoch seconds), or nil when it was lifted.
    package var until: Int64?
    /// Who ended it, or who lifted it.
    package var origin: EndedContexts.Origin

    /// A change of `key`.
    package init(key: EndedContexts.Key, until: Int64?, origin: EndedContexts.Origin = .operator) {
        self.key = key
        self.until = until
        self.origin = origin
    }

    /// The end it records, for an end.
    package var record: EndedContexts.Record? { until.map { EndedContexts.Record(until: $0, origin: origin) } }
}

/// The store answered and refused one command (a key of the wrong type, an ACL rule, out of memory for a write):
/// the store itself is up, and only this call falls back to local. What a store throws for anything else (no
/// connection, a deadline, a failover in progress) marks it down.
package struct SharedStoreCommandRefusal: Error, Sendable, CustomStringConvertible {
    /// The store's error code (`WRONGTYPE`, `NOPERM`, `OOM`), never the command's arguments.
    package let code: String

    /// A refusal with the store's error code.
    package init(code: String) { self.code = code }

    package var description: String { "the store refused the command: \(code)" }
}
