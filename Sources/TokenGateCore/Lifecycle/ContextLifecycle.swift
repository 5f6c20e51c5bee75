import Logging

/// Ends and lifts trips, vehicles, tasks and shipments: the admin API and the replication of ended contexts talk to
/// it, and the token pipelines read the ``EndedContexts`` it keeps.
///
/// An end evicts the context's cached tokens from the generation being served; the list outlives every generation.
public final class ContextLifecycle: Sendable {
    /// The contexts ended now: refused with `410 context_ended`.
    public let endedContexts: EndedContexts
    private let sharedState: SharedState?
    private let clock: TokenGateClock
    private let logger: Logger
    private let generation: @Sendable () -> GatewayGeneration

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
    /// message); the shared cache's copies are refused by every replica's ended list before they could be served.
    public func end(_ key: EndedContexts.Key, by admin: String) async -> (until: Int64, evicted: Int) {
        let now = clock.wallSeconds()
        let until = now + generation().configuration.endedContexts.refuseFor.components.seconds
        let evicted = applyEnd(key, until: until, now: now)
        if let sharedState {
            await sharedState.publish(EndedContextChange(key: key, until: until))
        }
        logger.notice(
            "context ended",
            metadata: [
                "provider": "\(key.provider)", "kind": "\(key.kind)", "id": "\(key.id)", "admin": "\(admin)", "until": "\(until)",
                "evicted": "\(evicted)",
            ])
        return (until, evicted)
    }

    /// Lifts an ended `key` (at every replica, with shared state); returns whether it was ended here.
    public func lift(_ key: EndedContexts.Key, by admin: String) async -> Bool {
        let lifted = endedContexts.lift(key, now: clock.wallSeconds())
        if let sharedState {
            await sharedState.publish(EndedContextChange(key: key, until: nil))
        }
        // A lift of what was not ended changes nothing here: not worth a notice (a loop of them would flood the log).
        logger.log(
            level: lifted ? .notice : .debug, "ended context lifted",
            metadata: ["provider": "\(key.provider)", "kind": "\(key.kind)", "id": "\(key.id)", "admin": "\(admin)", "wasEnded": "\(lifted)"])
        return lifted
    }

    /// Applies what another replica published, without publishing it again.
    func apply(_ change: EndedContextChange) {
        let now = clock.wallSeconds()
        if let until = change.until {
            guard until > now, endedContexts.endedUntil(change.key, now: now) != until else { return }
            let evicted = applyEnd(change.key, until: until, now: now)
            logger.info(
                "context ended at another replica",
                metadata: ["provider": "\(change.key.provider)", "kind": "\(change.key.kind)", "id": "\(change.key.id)", "evicted": "\(evicted)"])
        } else if endedContexts.lift(change.key, now: now) {
            logger.info(
                "ended context lifted at another replica",
                metadata: ["provider": "\(change.key.provider)", "kind": "\(change.key.kind)", "id": "\(change.key.id)"])
        }
    }

    /// Ends `key` until `until` here and evicts its cached tokens; returns how many.
    @discardableResult
    private func applyEnd(_ key: EndedContexts.Key, until: Int64, now: Int64) -> Int {
        endedContexts.end(key, until: until, now: now)
        // Ended first, evicted second: a request between the two is refused before it reaches the cache.
        return generation().providers[key.provider]?.cache.removeValues { context in
            guard let id = context.id, let kind = EndedContexts.Key.kind(of: context.tokenType) else {
                return false
            }
            return kind == key.kind && id == key.id
        } ?? 0
    }
}
