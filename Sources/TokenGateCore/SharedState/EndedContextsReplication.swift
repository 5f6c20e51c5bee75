import Logging
import ServiceLifecycle
import Synchronization

extension SharedState {
    /// Records `change` in the store and tells the other replicas; whether the store took it. A store that cannot
    /// be reached is logged: the change holds at this replica, which publishes it again at its next resync.
    func publish(_ change: EndedContextChange) async -> Bool {
        guard await attempt(.publish, { try await store.publish(change) }) != nil else {
            logger.error(
                "could not tell the other replicas; the change holds at this replica until the store takes it",
                metadata: [
                    "provider": "\(change.key.provider)", "context": "\(change.key.kind.rawValue) \(change.key.id)",
                    "change": "\(change.until == nil ? "lift" : "end")",
                ])
            return false
        }
        return true
    }

    /// Deletes the shared copies of `contexts`' tokens of `provider`, so an ended context's token is not adopted
    /// again once the end lapses or is lifted (a token already handed out lives on at Fleet Engine until `exp`), and
    /// their mint locks, so a mint under way when the end came stores nothing.
    func forgetTokens(of contexts: [TokenContext], provider: ProviderID) async {
        guard !contexts.isEmpty else { return }
        let keys = Set(contexts).flatMap { context in
            let key = TokenCacheKey(provider: provider, context: context)
            return [tokenKey(key), lockKey(key)]
        }
        _ = await attempt(.write) { try await store.removeValues(at: keys.sorted()) }
    }
}

/// Keeps this replica's ended contexts in step with the others': applies every change they publish (pub/sub, a
/// message within milliseconds; the same subscription tells a replica waiting for another's mint that it is
/// stored) and, every `resyncInterval` and after each (re)subscription, the store's whole list, so a replica that
/// was down or disconnected catches up: on ends it missed, and on lifts (an end held here that the store's list no
/// longer has). Changes made here that the store could not take are published again first.
package struct EndedContextsReplication: Service {
    let contexts: ContextLifecycle
    let sharedState: SharedState

    /// Replicates `service`'s ended contexts through `sharedState`.
    package init(service: TokenService, sharedState: SharedState) {
        self.contexts = service.contexts
        self.sharedState = sharedState
    }

    package func run() async throws {
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
                try await sharedState.store.watch(
                    subscribed: {
                        sharedState.isWatching.store(true, ordering: .relaxed)
                        Task { await self.resync() }
                    },
                    ended: { change in self.contexts.apply(change) },
                    stored: { key, value in sharedState.storedValues.notify(key, value: value) })
                sharedState.isWatching.store(false, ordering: .relaxed)
                logged = false
            } catch {
                sharedState.isWatching.store(false, ordering: .relaxed)
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

    /// Publishes this replica's changes the store has not taken, then makes the ended list the store's.
    func resync() async {
        await contexts.republishPending()
        // Only ends held before the list is read may be lifted for its lack: one a message brings meanwhile is newer.
        let held = contexts.endedKeys()
        guard let changes = await sharedState.attempt(.resync, { try await sharedState.store.endedContexts() }) else { return }
        contexts.reconcile(with: changes, heldBefore: held)
    }
}
