import Logging
import Synchronization

/// Ends and lifts trips, vehicles, tasks and shipments: the admin API, Fleet Engine's events and the replication of
/// ended contexts talk to it, and the token pipelines read the ``EndedContexts`` it keeps.
///
/// An end evicts the context's cached tokens from the generation being served; the list outlives every generation.
/// With shared state the store is told first, and holds every end: an end it refuses (the provider's share full)
/// changes nothing anywhere.
package final class ContextLifecycle: Sendable {
    /// The contexts ended now: refused with `410 context_ended`.
    package let endedContexts: EndedContexts
    private let sharedState: SharedState?
    private let clock: TokenGateClock
    private let logger: Logger
    private let generation: @Sendable () -> GatewayGeneration
    /// Changes made here that the shared store has not recorded yet (unreachable): published again until it takes
    /// them; their ends stay pinned here meanwhile.
    private let pending = Mutex<[EndedContexts.Key: EndedContextChange]>([:])

    init(
        endedContexts: EndedContexts, sharedState: SharedState?, clock: TokenGateClock, logger: Logger,
        generation: @escaping @Sendable () -> GatewayGeneration
    ) {
        self.endedContexts = endedContexts
        self.sharedState = sharedState
        self.clock = clock
        self.logger = logger
        self.generation = generation
    }

    /// Ends `key` for the configured time (`endedContexts.refuseFor`): new requests for it get `410 context_ended`,
    /// and its cached tokens are evicted. Returns until when it is refused and how many tokens were evicted.
    /// Tokens already handed out stay valid at Fleet Engine until they expire.
    ///
    /// With shared state, the store records it first (and deletes the shared cache's copies, so none is served once
    /// the end lapses or is lifted), and every replica is told. Throws `ended_list_full` when the provider's share
    /// holds `endedContexts.maxEntries` ends that have not expired: nothing is changed then.
    package func end(
        _ key: EndedContexts.Key, origin: EndedContexts.Origin = .operator, by actor: String
    ) async throws(TokenGateError) -> (until: Int64, evicted: Int) {
        try await end([key], of: key.provider, origin: origin, by: actor)
    }

    /// Ends every one of `keys` (of `provider`) as ``end(_:origin:by:)`` does, all or none: when the provider's list
    /// has no room for all of them, nothing is changed. Returns until when they are refused and how many cached
    /// tokens were evicted.
    package func end(
        _ keys: [EndedContexts.Key], of provider: ProviderID, origin: EndedContexts.Origin = .operator, by actor: String
    ) async throws(TokenGateError) -> (until: Int64, evicted: Int) {
        let now = clock.wallSeconds()
        let until = now + generation().configuration.endedContexts.refuseFor.components.seconds
        let changes = keys.filter { $0.provider == provider }.map { EndedContextChange(key: $0, until: until, origin: origin) }
        var ends = changes.map { (key: $0.key, record: EndedContexts.Record(until: until, origin: origin)) }
        var pinned: Set<EndedContexts.Key> = []
        if let sharedState {
            switch await sharedState.recordEnds(changes, capacity: storeCapacity) {
            case .full: throw full(provider, by: actor)
            case .taken(let recorded, let unreachable):
                ends = ends.map { ($0.key, recorded[$0.key] ?? $0.record) }
                pinned = Set(unreachable.map(\.key))
                pending.withLock { pending in for change in unreachable { pending[change.key] = change } }
            }
        }
        let evicted: [TokenContext]
        do {
            evicted = try applyEnds(ends, of: provider, now: now, pinned: pinned)
        } catch {
            // A gateway alone holds every end here: no room, nothing changed. With a store that took them, this
            // replica's copy is only full of its own unpublished ends; the store refuses these contexts at each mint.
            guard sharedState != nil else { throw full(provider, by: actor) }
            evicted = []
        }
        if let sharedState { await sharedState.forgetTokens(of: changes.flatMap(\.key.contexts) + evicted, provider: provider) }
        let first = changes.first?.key
        logger.notice(
            "context ended",
            metadata: [
                "provider": "\(provider)", "kind": "\(first.map { "\($0.kind)" } ?? "")", "id": "\(first.map { "\($0.id)" } ?? "")",
                "contexts": "\(changes.count)", "by": "\(actor)", "until": "\(until)", "evicted": "\(evicted.count)",
            ])
        return (ends.map(\.record.until).max() ?? until, evicted.count)
    }

    /// How many ends each provider may hold in the shared store (`endedContexts.maxEntries`).
    private var storeCapacity: Int { generation().configuration.endedContexts.maxEntries }

    /// The refusal of ends the provider's list has no room for, logged.
    private func full(_ provider: ProviderID, by actor: String) -> TokenGateError {
        let capacity = sharedState == nil ? endedContexts.capacity : storeCapacity
        logger.error(
            "context not ended: the provider's list of ended contexts is full (endedContexts.maxEntries)",
            metadata: ["provider": "\(provider)", "by": "\(actor)", "capacity": "\(capacity)"])
        return TokenGateError(.endedListFull, "provider \(provider) holds \(capacity) ended contexts that have not expired")
    }

    /// Lifts an ended `key` (at every replica, with shared state): an operator's lift always, an event's only an end
    /// an event made before it. Returns what it did.
    package func lift(_ key: EndedContexts.Key, origin: EndedContexts.Origin = .operator, by actor: String) async -> EndedContexts.Lift {
        let change = EndedContextChange(key: key, until: nil, origin: origin)
        let outcome: EndedContexts.Lift
        if let sharedState {
            if let stored = await sharedState.recordLift(change) {
                // The store decides (it told the others when it lifted); an end of this replica's own that it never
                // took is lifted here by the same rule.
                let local = endedContexts.lift(key, by: stored == .lifted ? .operator : origin, now: clock.wallSeconds())
                if local == .lifted { pending.withLock { _ = $0.removeValue(forKey: key) } }
                outcome = stored == .notEnded ? local : stored
            } else {
                outcome = endedContexts.lift(key, by: origin, now: clock.wallSeconds())
                if outcome == .lifted { pending.withLock { $0[key] = change } }
            }
        } else {
            outcome = endedContexts.lift(key, by: origin, now: clock.wallSeconds())
        }
        // A lift of what was not ended changes nothing here: not worth a notice (a loop of them would flood the log).
        logger.log(
            level: outcome == .lifted ? .notice : .debug, "ended context lifted",
            metadata: [
                "provider": "\(key.provider)", "kind": "\(key.kind)", "id": "\(key.id)", "by": "\(actor)", "outcome": "\(outcome)",
            ])
        return outcome
    }

    /// Publishes again every change made here that the store has not taken; once it has, an end is no longer pinned.
    func republishPending() async {
        guard let sharedState else { return }
        for change in pending.withLock({ Array($0.values) }) {
            let taken: Bool
            if change.until != nil {
                switch await sharedState.recordEnds([change], capacity: storeCapacity) {
                case .taken(_, let unreachable): taken = unreachable.isEmpty
                case .full:
                    // Held here alone: the store has no room for it. Kept, pinned, and tried again.
                    logger.error(
                        "an end made while the store was unreachable does not fit the provider's share of it; held at this replica only",
                        metadata: ["provider": "\(change.key.provider)", "kind": "\(change.key.kind)", "id": "\(change.key.id)"])
                    taken = false
                }
            } else {
                taken = await sharedState.recordLift(change) != nil
            }
            guard taken else { continue }
            pending.withLock { pending in
                if pending[change.key] == change { pending.removeValue(forKey: change.key) }
            }
            endedContexts.unpin(change.key)
        }
    }

    /// The subscription to the other replicas' changes is (re-)established: what this replica learned may hide a
    /// change it missed, so it forgets it (its own ends the store has not taken stay), and the cached tokens of
    /// every context an end could name; each is checked with the store at its next request.
    func resubscribed() {
        endedContexts.forgetUnpinned()
        for runtime in generation().providers.values {
            _ = runtime.cache.removeValues { EndedContexts.Key(provider: runtime.id, context: $0) != nil }
        }
    }

    /// Applies what another replica published, without publishing it again.
    func apply(_ change: EndedContextChange) {
        let now = clock.wallSeconds()
        guard let record = change.record else {
            if endedContexts.lift(change.key, now: now) == .lifted {
                logger.info(
                    "ended context lifted at another replica",
                    metadata: ["provider": "\(change.key.provider)", "kind": "\(change.key.kind)", "id": "\(change.key.id)"])
            }
            return
        }
        guard record.until > now, endedContexts.record(change.key, now: now) != record else { return }
        // Room is always made here (the store holds the end); only a list full of this replica's own unpublished
        // ends refuses, and the store then refuses this context at its next mint.
        guard let evicted = try? applyEnd(change.key, record, now: now, pinned: false) else { return }
        // The publisher deleted the shared copies it could name; a context only this replica had cached (a trusted
        // delivery driver's for one task) is named here.
        if let sharedState, !evicted.isEmpty {
            Task { await sharedState.forgetTokens(of: evicted, provider: change.key.provider) }
        }
        logger.info(
            "context ended at another replica",
            metadata: [
                "provider": "\(change.key.provider)", "kind": "\(change.key.kind)", "id": "\(change.key.id)", "evicted": "\(evicted.count)",
            ])
    }

    /// A context the store says has ended until `until`, found at a mint: kept here, so the next request is refused
    /// without asking the store.
    func learned(_ key: EndedContexts.Key, until: Int64) {
        _ = try? applyEnd(key, EndedContexts.Record(until: until, origin: .operator), now: clock.wallSeconds(), pinned: false)
    }

    /// Ends `key` with `record` here and evicts its cached tokens; returns their contexts.
    @discardableResult
    private func applyEnd(
        _ key: EndedContexts.Key, _ record: EndedContexts.Record, now: Int64, pinned: Bool
    ) throws(EndedContexts.Refusal) -> [TokenContext] {
        try applyEnds([(key, record)], of: key.provider, now: now, pinned: pinned ? [key] : [])
    }

    /// Ends `ends` (of `provider`) here, all or none, and evicts their cached tokens; returns their contexts.
    private func applyEnds(
        _ ends: [(key: EndedContexts.Key, record: EndedContexts.Record)], of provider: ProviderID, now: Int64,
        pinned: Set<EndedContexts.Key>
    ) throws(EndedContexts.Refusal) -> [TokenContext] {
        try endedContexts.end(ends, of: provider, now: now, pinned: pinned)
        // Ended first, evicted second: a request between the two is refused before it reaches the cache.
        guard let cache = generation().providers[provider]?.cache else { return [] }
        // The contexts the keys name are looked up; only a delivery vehicle's trusted drivers' tokens for one task each
        // (any task) need a look through the cache.
        var evicted = cache.removeValues(for: ends.flatMap(\.key.contexts))
        let vehicles = Set(ends.map(\.key).filter { $0.kind == .deliveryDriver }.map(\.id))
        if !vehicles.isEmpty {
            evicted += cache.removeValues { context in
                guard case .trustedDeliveryVehicle(let id, _) = context else { return false }
                return vehicles.contains(id)
            }
        }
        return evicted
    }
}
