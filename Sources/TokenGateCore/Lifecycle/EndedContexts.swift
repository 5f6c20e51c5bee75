import Synchronization

/// Trips, vehicles, tasks and shipments an operator has ended: no new token for them until the entry expires or is
/// lifted.
///
/// Owned by the ``TokenService``, not by a generation, so it survives every reload. Keyed by the entity rather
/// than the token type: ending a delivery vehicle refuses its untrusted and trusted drivers' tokens alike, and
/// ending a delivery consumer's ID refuses it as a tracking ID and as a task ID.
///
/// The request path asks ``isEnded(_:provider:now:)`` on every token request; while nothing is ended (the usual
/// state) that is one relaxed atomic load, no lock.
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

    /// The most entries kept; beyond it the one closest to expiry goes first.
    package let capacity: Int
    private let entries: Mutex<[Key: Int64]>
    // Mirrors `entries.count`, so the request path skips the lock while nothing is ended.
    private let count = Atomic<Int>(0)

    /// An empty list holding at most `capacity` entries.
    package init(capacity: Int = 100_000) {
        precondition(capacity > 0)
        self.capacity = capacity
        self.entries = Mutex([:])
    }

    /// Ends `key` until `until` (epoch seconds); ending it again moves the time. Returns the time in force.
    @discardableResult
    package func end(_ key: Key, until: Int64, now: Int64) -> Int64 {
        entries.withLock { entries in
            entries[key] = until
            if entries.count > capacity {
                entries = entries.filter { $0.value > now }
                while entries.count > capacity, let soonest = entries.min(by: { $0.value < $1.value }) {
                    entries.removeValue(forKey: soonest.key)
                }
            }
            count.store(entries.count, ordering: .relaxed)
        }
        return until
    }

    /// Lifts `key`; returns whether it was ended (and not yet expired) at `now`.
    @discardableResult
    package func lift(_ key: Key, now: Int64) -> Bool {
        entries.withLock { entries in
            let until = entries.removeValue(forKey: key)
            count.store(entries.count, ordering: .relaxed)
            return until.map { $0 > now } ?? false
        }
    }

    /// Until when `key` is ended, or nil if it is not (an expired entry is dropped as it is found).
    package func endedUntil(_ key: Key, now: Int64) -> Int64? {
        entries.withLock { entries in
            guard let until = entries[key] else { return nil }
            guard until > now else {
                entries.removeValue(forKey: key)
                count.store(entries.count, ordering: .relaxed)
                return nil
            }
            return until
        }
    }

    /// Whether a token for `context` of `provider` must be refused now.
    package func isEnded(_ context: TokenContext, provider: ProviderID, now: Int64) -> Bool {
        guard count.load(ordering: .relaxed) > 0, let id = context.id,
            let key = Key(provider: provider, tokenType: context.tokenType, id: id)
        else { return false }
        return endedUntil(key, now: now) != nil
    }

    /// The keys ended at `now`, for comparing with the shared store's list.
    func endedKeys(now: Int64) -> [Key] {
        entries.withLock { entries in entries.filter { $0.value > now }.map(\.key) }
    }

    /// How many entries are held (expired ones included until they are found).
    package var entryCount: Int { count.load(ordering: .relaxed) }
}
