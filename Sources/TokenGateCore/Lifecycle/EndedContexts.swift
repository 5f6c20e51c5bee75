import Synchronization

/// Trips, vehicles, tasks and shipments that have ended: no new token for them until the entry expires or is lifted.
///
/// Owned by the ``TokenService``, not by a generation, so it survives every reload. Keyed by the entity rather
/// than the token type: ending a delivery vehicle refuses its untrusted and trusted drivers' tokens alike, and
/// ending a delivery consumer's ID refuses it as a tracking ID and as a task ID.
///
/// Each provider has a list of its own, of at most ``capacity`` entries, so one tenant ending many contexts never
/// crowds out another's. What happens when a provider's list is full depends on what the list is:
/// - on a gateway alone it is the whole truth, so an entry is never dropped before it expires: a new end is refused
///   (``Refusal/full(capacity:)``) and said so to whoever asked (the admin API's `507`, a fleet event left for Pub/Sub
///   to retry);
/// - with a shared store it is this replica's copy of what it learned, the store holding the truth (checked on every
///   mint): the provider's oldest entry goes to make room, unless it is *pinned*, an end made here that the store
///   has not taken yet.
///
/// The request path asks ``isEnded(_:provider:now:)`` on every token request; while nothing is ended (the usual
/// state) that is one relaxed atomic load, no lock. Ending, lifting and expiring cost the same whatever the list
/// holds: entries leave in the order they were made (the time each stays is one setting, so that is the order they
/// expire in), from a queue, never by a scan.
package final class EndedContexts: Sendable {
    /// One ended entity of one provider.
    package struct Key: Hashable, Sendable, CustomStringConvertible {
        /// The provider.
        package let provider: ProviderID
        /// The kind of entity, named by the token type whose context it is (`consumer`: a trip, `driver`: a
        /// vehicle, `delivery-driver`: a delivery vehicle, `delivery-consumer`: a tracking or task ID).
        package let kind: TokenType
        /// Its ID.
        package let id: ContextID

        /// The key of `id` for a `tokenType` the end-context API names, or nil for a type without one entity
        /// (batches, whole fleets).
        package init?(provider: ProviderID, tokenType: TokenType, id: ContextID) {
            guard let kind = Self.kind(of: tokenType) else { return nil }
            self.provider = provider
            self.kind = kind
            self.id = id
        }

        /// The key a token for `context` of `provider` is refused under, or nil for a context no end names.
        package init?(provider: ProviderID, context: TokenContext) {
            guard let id = context.id else { return nil }
            self.init(provider: provider, tokenType: context.tokenType, id: id)
        }

        static func kind(of type: TokenType) -> TokenType? {
            switch type {
            case .consumer, .driver, .deliveryDriver, .deliveryConsumer: type
            case .trustedDeliveryDriver: .deliveryDriver
            case .batchTasks, .fleetReader, .deliveryFleetReader, .server: nil
            }
        }

        /// The contexts named by this key's ID alone: every context it ends but a trusted delivery driver's for
        /// one task (that one also names the task).
        var contexts: [TokenContext] {
            switch kind {
            case .consumer: [.trip(id)]
            case .driver: [.vehicle(id)]
            case .deliveryDriver: [.deliveryVehicle(id), .trustedDeliveryVehicle(id, task: .all)]
            case .deliveryConsumer: [.tracking(id), .task(id)]
            default: []
            }
        }

        package var description: String { "\(provider) \(kind) \(id)" }
    }

    /// Who ended a context. An event may lift only what an event ended, and only when it is newer than that end: an
    /// operator's end (a revoked driver's vehicle) never comes back with the vehicle's next update, and an older
    /// event delivered late (Pub/Sub does not order its deliveries) never undoes a newer one.
    package enum Origin: Sendable, Hashable {
        /// An operator, through the admin API or the command line.
        case `operator`
        /// One of Fleet Engine's events, by the log entry's own time (epoch milliseconds), not the delivery's.
        case event(at: Int64)
    }

    /// One end: until when it holds (epoch seconds) and who made it.
    package struct Record: Sendable, Hashable {
        /// Until when tokens are refused, epoch seconds.
        package var until: Int64
        /// Who ended it.
        package var origin: Origin

        /// An end until `until` by `origin`.
        package init(until: Int64, origin: Origin) {
            self.until = until
            self.origin = origin
        }

        /// This end and `other` of the same entity as one: the later time, and an operator's origin over an event's
        /// (an event's end never weakens an operator's), else the newer event.
        func merged(with other: Record) -> Record {
            let origin: Origin =
                switch (origin, other.origin) {
                case (.operator, _), (_, .operator): .operator
                case (.event(let mine), .event(let theirs)): .event(at: max(mine, theirs))
                }
            return Record(until: max(until, other.until), origin: origin)
        }
    }

    /// Why an end was not taken.
    package enum Refusal: Error, Sendable, Equatable {
        /// The provider's list holds `capacity` entries, none of which may go before it expires.
        case full(capacity: Int)
    }

    /// What a lift did.
    package enum Lift: Sendable, Equatable {
        /// The end is lifted.
        case lifted
        /// Nothing was ended (or the end had expired).
        case notEnded
        /// An event asked, but the end is an operator's, or newer than the event: it stays.
        case kept(Record)
    }

    /// The most entries each provider keeps.
    package let capacity: Int
    /// Whether a full provider's oldest (unpinned) entry makes room (a replica's copy of a shared store's list), or
    /// a new end is refused (a gateway alone).
    package let evictsWhenFull: Bool
    private let partitions = Mutex<[ProviderID: Partition]>([:])
    // The number of entries of every provider, so the request path skips the lock while nothing is ended.
    private let count = Atomic<Int>(0)

    /// An empty list holding at most `capacity` entries per provider.
    package init(capacity: Int = 100_000, evictsWhenFull: Bool = false) {
        precondition(capacity > 0)
        self.capacity = capacity
        self.evictsWhenFull = evictsWhenFull
    }

    /// The list a gateway keeps: the whole truth, `maxEntries` per provider, on a gateway alone; with a shared store,
    /// which holds the truth (`maxEntries` per provider there), this replica's copy of what it learned, at most
    /// ``sharedCopyCapacity`` per provider, so a replica's memory does not grow with the ends the store holds.
    package static func forGateway(_ settings: EndedContextSettings, shared: Bool) -> EndedContexts {
        shared
            ? EndedContexts(capacity: min(settings.maxEntries, sharedCopyCapacity), evictsWhenFull: true)
            : EndedContexts(capacity: settings.maxEntries)
    }

    /// The most ends a replica keeps per provider of what it learned from a shared store.
    package static let sharedCopyCapacity = 100_000

    /// Ends `key` with `record` (merged with an end it already has); `pinned` keeps it from being evicted until
    /// ``unpin(_:)``. Returns the end in force.
    @discardableResult
    package func end(_ key: Key, _ record: Record, now: Int64, pinned: Bool = false) throws(Refusal) -> Record {
        try end([(key, record)], of: key.provider, now: now, pinned: pinned ? [key] : [])[key] ?? record
    }

    /// Ends every key of `ends` (of one provider) with its record, all or none: when the provider's list has no room
    /// for those it does not hold yet, nothing changes. Keys in `pinned` are pinned. Returns the ends in force.
    @discardableResult
    package func end(
        _ ends: [(key: Key, record: Record)], of provider: ProviderID, now: Int64, pinned: Set<Key> = []
    ) throws(Refusal) -> [Key: Record] {
        try withPartition(of: provider) { (partition) throws(Refusal) -> [Key: Record] in
            partition.dropExpired(now: now)
            let new = Set(ends.map(\.key)).filter { partition.entries[$0].map { $0.until <= now } ?? true }
            if partition.entries.count + new.count > capacity {
                guard evictsWhenFull, new.count <= capacity else { throw .full(capacity: capacity) }
                while partition.entries.count + new.count > capacity {
                    guard partition.evictOldestUnpinned() else { throw .full(capacity: capacity) }
                }
            }
            var inForce: [Key: Record] = [:]
            for (key, record) in ends where key.provider == provider {
                let merged = partition.entries[key].flatMap { $0.until > now ? $0.merged(with: record) : nil } ?? record
                partition.set(key, merged, pinned: pinned.contains(key))
                inForce[key] = merged
            }
            return inForce
        }
    }

    /// Lifts `key`: an operator's lift (`by: .operator`) always, an event's only an end an event made before it.
    @discardableResult
    package func lift(_ key: Key, by origin: Origin = .operator, now: Int64) -> Lift {
        withPartition(of: key.provider) { partition in
            guard let record = partition.entries[key], record.until > now else {
                partition.remove(key)
                return .notEnded
            }
            if case .event(let at) = origin {
                guard case .event(let endedAt) = record.origin, endedAt < at else { return .kept(record) }
            }
            partition.remove(key)
            return .lifted
        }
    }

    /// The end of `key` in force at `now`, or nil (an expired entry is dropped as it is found).
    package func record(_ key: Key, now: Int64) -> Record? {
        guard count.load(ordering: .relaxed) > 0 else { return nil }
        return withPartition(of: key.provider) { partition in
            guard let record = partition.entries[key] else { return nil }
            guard record.until > now else {
                partition.remove(key)
                return nil
            }
            return record
        }
    }

    /// Until when `key` is ended, or nil if it is not.
    package func endedUntil(_ key: Key, now: Int64) -> Int64? { record(key, now: now)?.until }

    /// Whether a token for `context` of `provider` must be refused now.
    package func isEnded(_ context: TokenContext, provider: ProviderID, now: Int64) -> Bool {
        guard count.load(ordering: .relaxed) > 0, let key = Key(provider: provider, context: context) else { return false }
        return record(key, now: now) != nil
    }

    /// Lets `key` be evicted again: the shared store has taken its end.
    package func unpin(_ key: Key) {
        withPartition(of: key.provider) { _ = $0.pinned.remove(key) }
    }

    /// Forgets every entry not pinned: with a shared store, what this replica learned may be out of date (a lift it
    /// missed while it was not told of changes); the store is asked again on each context's next mint.
    package func forgetUnpinned() {
        let providers = partitions.withLock { Array($0.keys) }
        for provider in providers {
            withPartition(of: provider) { partition in
                for key in partition.entries.keys where !partition.pinned.contains(key) { partition.remove(key) }
            }
        }
    }

    /// How many entries are held (expired ones included until they are found).
    package var entryCount: Int { count.load(ordering: .relaxed) }

    /// How many entries `provider` holds (expired ones included until they are found).
    package func entryCount(of provider: ProviderID) -> Int { partitions.withLock { $0[provider]?.entries.count ?? 0 } }

    /// Runs `body` on `provider`'s partition and keeps ``count`` in step.
    private func withPartition<Result, Failure: Error>(
        of provider: ProviderID, _ body: (inout Partition) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try partitions.withLock { (partitions) throws(Failure) -> Result in
            var partition = partitions.removeValue(forKey: provider) ?? Partition()
            let before = partition.entries.count
            defer {
                count.add(partition.entries.count - before, ordering: .relaxed)
                if !partition.entries.isEmpty { partitions[provider] = partition }
            }
            return try body(&partition)
        }
    }

    /// One provider's entries, and the order they were made in.
    private struct Partition {
        var entries: [Key: Record] = [:]
        var pinned: Set<Key> = []
        /// Every (key, until) set, oldest first; an item whose key has since been ended again, lifted or dropped is
        /// stale and skipped as it is reached.
        var order: [(key: Key, until: Int64)] = []
        var head = 0

        mutating func set(_ key: Key, _ record: Record, pinned: Bool) {
            entries[key] = record
            if pinned { self.pinned.insert(key) }
            order.append((key, record.until))
        }

        mutating func remove(_ key: Key) {
            entries.removeValue(forKey: key)
            pinned.remove(key)
            if entries.isEmpty {
                order.removeAll()
                head = 0
            }
        }

        /// Drops the entries at the front of the order whose time is over.
        mutating func dropExpired(now: Int64) {
            while head < order.count {
                let (key, until) = order[head]
                if let record = entries[key], record.until == until {
                    guard until <= now else { break }
                    entries.removeValue(forKey: key)
                    pinned.remove(key)
                }
                head += 1
            }
            compact()
        }

        /// Drops the oldest entry that is not pinned; false when every entry is.
        mutating func evictOldestUnpinned() -> Bool {
            var index = head
            while index < order.count {
                let (key, until) = order[index]
                let isLive = entries[key]?.until == until
                if isLive, !pinned.contains(key) {
                    entries.removeValue(forKey: key)
                    if index == head { head += 1 }
                    compact()
                    return true
                }
                // The front moves past stale items only: a pinned entry stays in the order, to go when unpinned.
                if !isLive, index == head { head += 1 }
                index += 1
            }
            compact()
            return false
        }

        /// Keeps the order from growing past twice the entries: stale items go once they are half of it.
        private mutating func compact() {
            guard head > 64, head * 2 > order.count else { return }
            order.removeFirst(head)
            head = 0
            if order.count > 2 * entries.count + 64 {
                order = order.filter { entries[$0.key]?.until == $0.until }
            }
        }
    }
}
