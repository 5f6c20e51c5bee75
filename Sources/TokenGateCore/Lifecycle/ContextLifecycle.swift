import Logging
import Synchronization

/// Ends and lifts trips, vehicles, tasks and shipments: the admin API and the replication of ended contexts talk to
/// it, and the token pipelines read the ``EndedContexts`` it keeps.
///
/// An end evicts the context's cached tokens from the generation being served; the list outlives every generation.
package final class ContextLifecycle: Sendable {
    /// The contexts ended now: refused with `410 context_ended`.
    package let endedContexts: EndedContexts
    private let sharedState: SharedState?
    private let clock: TokenGateClock
    private let logger: Logger
    private let generation: @Sendable () -> GatewayGeneration
    /// Changes made here that the shared store has not recorded yet (unreachable, or the call in progress): a resync
    /// publishes them again, and never undoes them from the store's older list meanwhile.
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
    /// With shared state, every replica is told (and the store's list records it for replicas that missed the
    /// message), and the shared cache's copies are deleted, so none is served once the end lapses or is lifted.
    package func end(_ key: EndedContexts.Key, by admin: String) async -> (until: Int64, evicted: Int) {
        let now = clock.wallSeconds()
        let until = now + generation().configuration.endedContexts.refuseFor.components.seconds
        let change = EndedContextChange(key: key, until: until)
        if sharedState != nil { pending.withLock { $0[key] = change } }
        let evicted = applyEnd(key, until: until, now: now)
        if let sharedState {
            await publish(change)
            await sharedState.forgetTokens(of: key.contexts + evicted, provider: key.provider)
        }
        logger.notice(
            "context ended",
            metadata: [
                "provider": "\(key.provider)", "kind": "\(key.kind)", "id": "\(key.id)", "admin": "\(admin)", "until": "\(until)",
                "evicted": "\(evicted.count)",
            ])
        return (until, evicted.count)
    }

    /// Lifts an ended `key` (at every replica, with shared state); returns whether it was ended here.
    package func lift(_ key: EndedContexts.Key, by admin: String) async -> Bool {
        let change = EndedContextChange(key: key, until: nil)
        if sharedState != nil { pending.withLock { $0[key] = change } }
        let lifted = endedContexts.lift(key, now: clock.wallSeconds())
        if sharedState != nil { await publish(change) }
        // A lift of what was not ended changes nothing here: not worth a notice (a loop of them would flood the log).
        logger.log(
            level: lifted ? .notice : .debug, "ended context lifted",
            metadata: ["provider": "\(key.provider)", "kind": "\(key.kind)", "id": "\(key.id)", "admin": "\(admin)", "wasEnded": "\(lifted)"])
        return lifted
    }

    /// Publishes `change`, made here; once the store has it, it is no longer pending (unless a newer change of its
    /// key took its place meanwhile).
    private func publish(_ change: EndedContextChange) async {
        guard let sharedState, await sharedState.publish(change) else { return }
        pending.withLock { pending in
            if pending[change.key] == change { pending.removeValue(forKey: change.key) }
        }
    }

    /// Publishes again every change made here that the store has not taken.
    func republishPending() async {
        for change in pending.withLock({ Array($0.values) }) { await publish(change) }
    }

    /// The keys ended here now.
    func endedKeys() -> Set<EndedContexts.Key> { Set(endedContexts.endedKeys(now: clock.wallSeconds())) }

    /// Makes this replica's ended list the store's `changes` (its whole list): ends it lacks are applied, and ends
    /// held here since before the list was read (`heldBefore`) that it no longer has were lifted elsewhere (a message
    /// missed), so they are lifted here; changes made here and not yet recorded in the store are left alone.
    func reconcile(with changes: [EndedContextChange], heldBefore: Set<EndedContexts.Key>) {
        for change in changes { apply(change) }
        let listed = Set(changes.map(\.key))
        let pendingKeys = pending.withLock { Set($0.keys) }
        for key in heldBefore.intersection(endedKeys()) where !listed.contains(key) && !pendingKeys.contains(key) {
            apply(EndedContextChange(key: key, until: nil))
        }
    }

    /// Applies what another replica published, without publishing it again.
    func apply(_ change: EndedContextChange) {
        let now = clock.wallSeconds()
        if let until = change.until {
            guard until > now, endedContexts.endedUntil(change.key, now: now) != until else { return }
            let evicted = applyEnd(change.key, until: until, now: now)
            // The publisher deleted the shared copies it could name; a context only this replica had cached (a
            // trusted delivery driver's for one task) is named here.
            if let sharedState, !evicted.isEmpty {
                Task { await sharedState.forgetTokens(of: evicted, provider: change.key.provider) }
            }
            logger.info(
                "context ended at another replica",
                metadata: [
                    "provider": "\(change.key.provider)", "kind": "\(change.key.kind)", "id": "\(change.key.id)", "evicted": "\(evicted.count)",
                ])
        } else if endedContexts.lift(change.key, now: now) {
            logger.info(
                "ended context lifted at another replica",
                metadata: ["provider": "\(change.key.provider)", "kind": "\(change.key.kind)", "id": "\(change.key.id)"])
        }
    }

    /// Ends `key` until `until` here and evicts its cached tokens; returns their contexts.
    @discardableResult
    private func applyEnd(_ key: EndedContexts.Key, until: Int64, now: Int64) -> [TokenContext] {
        endedContexts.end(key, until: until, now: now)
        // Ended first, evicted second: a request between the two is refused before it reaches the cache.
        return generation().providers[key.provider]?.cache.removeValues { context in
            guard let id = context.id, let kind = EndedContexts.Key.kind(of: context.tokenType) else {
                return false
            }
            return kind == key.kind && id == key.id
        } ?? []
    }
}
