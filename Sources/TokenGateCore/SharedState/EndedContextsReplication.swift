import Logging
import ServiceLifecycle
import Synchronization

extension SharedState {
    /// What recording ends in the store did.
    enum EndsRecording {
        /// The provider's share of the store has no room for all of them (it holds `capacity` ends that have not
        /// expired): nothing changed.
        case full
        /// The store holds the ends in `recorded` (each merged with one it held); or, when it could not be asked to
        /// (logged), the ends are in `unreachable`: they hold at this replica, which publishes them again.
        case taken(recorded: [EndedContexts.Key: EndedContexts.Record], unreachable: [EndedContextChange])
    }

    /// Records `changes` (ends of one provider) in the store, counted all or none in the provider's share of at most
    /// `capacity` ends, and tells the other replicas. One call counts them all (the provider's slot); then the store
    /// records them (in one call for those that share a slot).
    func recordEnds(_ changes: [EndedContextChange], capacity: Int) async -> EndsRecording {
        guard let provider = changes.first?.key.provider else { return .taken(recorded: [:], unreachable: []) }
        let entries = changes.compactMap { change in change.until.map { (entry: endedEntry(change.key), until: $0) } }
        let now = clock.wallSeconds()
        guard
            let admitted = await attempt(
                .publish, { try await store.admit(entries, now: now, into: endedIndexKey(provider), capacity: capacity) })
        else { return .taken(recorded: [:], unreachable: logUnreachable(changes)) }
        guard admitted else { return .full }
        guard let records = await attempt(.publish, { try await store.recordEnds(changes, at: changes.map { endedKey($0.key) }) }),
            records.count == changes.count
        else { return .taken(recorded: [:], unreachable: logUnreachable(changes)) }
        return .taken(recorded: Dictionary(zip(changes.map(\.key), records)) { _, last in last }, unreachable: [])
    }

    /// Lifts `change.key` in the store as `change` says, and tells the other replicas when it did; nil when the store
    /// could not be reached (logged).
    func recordLift(_ change: EndedContextChange) async -> EndedContexts.Lift? {
        let (entry, index) = (endedEntry(change.key), endedIndexKey(change.key.provider))
        guard let lift = await attempt(.lift, { try await store.recordLift(change, at: endedKey(change.key), entry: entry, index: index) })
        else {
            _ = logUnreachable([change])
            return nil
        }
        return lift
    }

    /// Logs changes the store could not be asked to take, in one line; returns them.
    private func logUnreachable(_ changes: [EndedContextChange]) -> [EndedContextChange] {
        guard let first = changes.first else { return changes }
        logger.error(
            "could not tell the other replicas; the change holds at this replica until the store takes it",
            metadata: [
                "provider": "\(first.key.provider)", "context": "\(first.key.kind.rawValue) \(first.key.id)",
                "change": "\(first.until == nil ? "lift" : "end")", "changes": "\(changes.count)",
            ])
        return changes
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
/// stored).
///
/// The store holds every end, one entry per entity that expires with it, and a mint checks its context's entry in
/// the same step as it reads the shared token: so a replica never reads a list of ends, at its start or after,
/// and what it costs does not grow with how many there are. What a replica keeps is what it learned, trusted only
/// while it is told of every change: each time its subscription is (re-)established it forgets what it learned
/// (and the tokens of contexts an end could name), since a change may have been missed meanwhile, and while the
/// subscription is down such contexts are checked with the store on every request (``SharedState/isWatching``).
/// Changes made here that the store could not take are published again every `resyncInterval`.
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
            group.addTask { await self.republishPeriodically() }
            try? await gracefulShutdown()
            group.cancelAll()
        }
    }

    /// Subscribes for as long as it runs; a failed subscription is retried every second, and logged once per
    /// outage (the first failure after a subscription held), not once per retry.
    private func watch() async {
        let catchUp = CatchUp(contexts: contexts, sharedState: sharedState)
        var logged = false
        while !Task.isCancelled {
            do {
                try await sharedState.store.watch(
                    subscribed: { catchUp.requested() },
                    interrupted: { catchUp.interrupted() },
                    ended: { change in self.contexts.apply(change) },
                    stored: { key, value in sharedState.storedValues.notify(key, value: value) })
                sharedState.isWatching.store(false, ordering: .releasing)
                logged = false
            } catch {
                sharedState.isWatching.store(false, ordering: .releasing)
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

    private func republishPeriodically() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: sharedState.settings.resyncInterval)
            if Task.isCancelled { return }
            await contexts.republishPending()
        }
    }
}

/// What a replica does each time it is told every change again (subscribed, or past messages it dropped): forget what
/// it learned, since a change may have been missed, then trust what it is told. One catch-up at a time: gaps that come
/// while one runs (a burst of ends faster than they are read) make one more, not one each; the replica asks the
/// store about every such context meanwhile.
private final class CatchUp: Sendable {
    private struct State {
        var running = false
        /// Asked for again while running: one more round.
        var again = false
        /// Interrupted since the round began: the round must not end with the replica trusting what it is told.
        var interrupted = false
    }

    private let contexts: ContextLifecycle
    private let sharedState: SharedState
    private let state = Mutex(State())

    init(contexts: ContextLifecycle, sharedState: SharedState) {
        self.contexts = contexts
        self.sharedState = sharedState
    }

    /// A message may have been missed: the replica stops trusting what it knows until the next catch-up ends.
    func interrupted() {
        state.withLock { state in
            state.interrupted = true
            sharedState.isWatching.store(false, ordering: .releasing)
        }
        sharedState.metrics.recordError(.subscribe)
    }

    /// Every message is received again.
    func requested() {
        let start = state.withLock { state in
            if state.running {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
        guard start else { return }
        Task {
            while true {
                state.withLock { $0.interrupted = false }
                // Forgotten before the replica trusts what it is told again: nothing learned before can hide a
                // change missed meanwhile.
                contexts.resubscribed()
                let done = state.withLock { state in
                    if state.again {
                        state.again = false
                        return false
                    }
                    state.running = false
                    if !state.interrupted { sharedState.isWatching.store(true, ordering: .releasing) }
                    return true
                }
                if done { break }
            }
            await contexts.republishPending()
        }
    }
}
