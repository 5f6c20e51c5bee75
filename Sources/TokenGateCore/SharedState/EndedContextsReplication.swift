public import ServiceLifecycle
import Logging

extension SharedState {
    /// Records `change` in the store and tells the other replicas; a store that cannot be reached is logged (the
    /// change holds at this replica, and the others learn of an end at their next resync after it is published).
    func publish(_ change: EndedContextChange) async {
        if await attempt(.publish, { try await store.publish(change) }) == nil {
            logger.error(
                "could not tell the other replicas; the change holds at this replica only",
                metadata: ["change": "\(change.message)"])
        }
    }
}

/// Keeps this replica's ended contexts in step with the others': applies every change they publish (pub/sub, a
/// message within milliseconds) and, every `resyncInterval` and after each (re)subscription, the store's whole
/// list, so a replica that was down or disconnected catches up.
///
/// A resync only adds ends: a lift missed while disconnected is not seen, and the end it lifted lapses at its
/// time (`endedContexts.refuseFor`).
public struct EndedContextsReplication: Service {
    let contexts: ContextLifecycle
    let sharedState: SharedState

    /// Replicates `service`'s ended contexts through `sharedState`.
    public init(service: TokenService, sharedState: SharedState) {
        self.contexts = service.contexts
        self.sharedState = sharedState
    }

    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.watch() }
            group.addTask { await self.resyncPeriodically() }
            try? await gracefulShutdown()
            group.cancelAll()
        }
    }

    /// Subscribes for as long as it runs; a failed subscription is retried every second, and logged once per
    /// outage (the first failure after a subscription held), not once per retry.
    private func watch() async {
        var logged = false
        while !Task.isCancelled {
            do {
                try await sharedState.store.watchEndedContexts(
                    subscribed: { Task { await self.resync() } },
                    { change in self.contexts.apply(change) })
                logged = false
            } catch {
                if Task.isCancelled { return }
                sharedState.metrics.recordError(.subscribe)
                if !logged {
                    sharedState.logger.warning(
                        "cannot watch for ended contexts; retrying every second", metadata: ["error": "\(error)"])
                    logged = true
                }
            }
            try? await Task.sleep(for: SharedState.retryAfterFailure)
        }
    }

    private func resyncPeriodically() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: sharedState.settings.resyncInterval)
            if Task.isCancelled { return }
            await resync()
        }
    }

    /// Applies every end in the store's list that this replica does not hold yet.
    func resync() async {
        guard let changes = await sharedState.attempt(.resync, { try await sharedState.store.endedContexts() }) else { return }
        for change in changes { contexts.apply(change) }
    }
}
