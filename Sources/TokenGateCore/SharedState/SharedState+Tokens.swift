import JOSE
import Logging
import OpenSSLPrimitives
import Synchronization

extension SharedState {
    /// What a token read from the store turned out to be, after the same verification a minted one passes.
    enum Adoption {
        /// Verified, with more than the refresh window left: served and cached locally.
        case usable(DeliveredToken)
        /// Verified but inside the refresh window: the store's copy is due for replacement, so this counts as a miss.
        case stale
        /// Failed verification: never served.
        case rejected(TokenRejection.Reason)
    }

    /// How often a replica waiting for another's mint looks for the result while it cannot be told of it (its
    /// subscription down).
    static let pollInterval: Duration = .milliseconds(20)
    /// How long a replica that is told of every stored token waits before looking anyway: a lost message, or a
    /// lock that lapsed with its holder, costs this much.
    static let fallbackPollInterval: Duration = .milliseconds(250)

    /// A context the store holds an end for, found at a mint: nothing was read nor locked.
    struct EndedInStore: Error {
        let key: EndedContexts.Key
        let until: Int64
    }

    /// Whether a request for `context` of `provider` must be checked with the store rather than answered from this
    /// replica's cache: a context an end can name, while this replica is not told of the others' ends, unless the
    /// operator chose to serve such contexts unchecked.
    package func mustCheckStore(for context: TokenContext, of provider: ProviderID) -> Bool {
        settings.uncheckedContexts == .refuse && !isWatching.load(ordering: .acquiring)
            && EndedContexts.Key(provider: provider, context: context) != nil
    }

    /// The token for `key` when the local cache has none: the store's copy if it verifies, else one mint across
    /// all replicas (the lock holder mints and stores; the others wait for its result and read it). For a context
    /// an end can name, the store's end is checked in the same step: throws ``EndedInStore`` when it has one.
    ///
    /// When the store is unreachable or late, or the lock stays held for twice `lockTimeout`, this replica mints on
    /// its own (one extra signature, never a wrong token); but a context whose end it cannot check is refused
    /// `shared_state_unavailable` instead (`sharedState.uncheckedContexts: refuse`, the default).
    func token(
        for key: TokenCacheKey,
        refreshBefore: Int64,
        share: Int,
        adopt: (String) -> Adoption,
        mint: () async throws -> DeliveredToken
    ) async throws -> DeliveredToken {
        let (storeKey, provider) = (tokenKey(key), key.provider)
        let ended = EndedContexts.Key(provider: provider, context: key.context)
        let endedStoreKey = ended.map(endedKey)
        let hold = SharedLockHold(key: lockKey(key), owner: HexBytes.encode((try? SecureRandom.bytes(count: 16)) ?? []))
        // Twice the lock's life: a lock that lapses (its holder died) is taken over by one waiter, whose result the
        // others still wait for; only a second stuck holder makes them mint on their own.
        let giveUpAt = ContinuousClock.now + settings.lockTimeout * 2
        var waited = false
        while true {
            // Registered before the store is asked: a token stored after a refused lock wakes this replica, and one
            // stored before is what the store answers (the value and the lock are looked at in one step).
            let notice = storedValues.register(storeKey)
            defer { storedValues.unregister(notice) }
            var found = await attempt(.read) {
                try await store.value(at: storeKey, orLock: hold, lifetime: settings.lockTimeout, ended: endedStoreKey)
            }
            if case .ended(let until) = found, let ended { throw EndedInStore(key: ended, until: until) }
            if case .value(let box) = found {
                if let token = adopted(box, at: storeKey, provider: provider, adopt: adopt, records: !waited) {
                    if waited { metrics.recordMint(.waited, provider: provider) }
                    return token
                }
                // A value not worth serving (due for a refresh, or not ours) is replaced, under the lock as usual.
                found = await attempt(.lock) {
                    try await store.lock(hold.key, owner: hold.owner, lifetime: settings.lockTimeout) ? .locked : .heldByAnother
                }
            } else if found != nil, !waited {
                metrics.recordCache(.miss, provider: provider)
            }
            switch found {
            case nil:
                if let ended, let endedStoreKey, settings.uncheckedContexts == .refuse {
                    try await checkEndAlone(ended, at: endedStoreKey, of: key.context)
                }
                metrics.recordMint(.unshared, provider: provider)
                return try await mint()
            case .locked?:
                metrics.recordMint(.locked, provider: provider)
                return try await mintHoldingLock(hold, storeKey: storeKey, provider: provider, share: share, refreshBefore: refreshBefore, mint: mint)
            case .heldByAnother?, .value?, .ended?:  // (a value was adopted above, or asked for the lock again)
                if ContinuousClock.now >= giveUpAt {
                    metrics.recordMint(.timedOut, provider: provider)
                    return try await mint()
                }
                // Another replica mints: it tells us when its result is stored, or its lock lapses and one of us
                // takes over (found by looking anyway, as is a result whose message was lost).
                await notice.wait(upTo: isWatching.load(ordering: .relaxed) ? Self.fallbackPollInterval : Self.pollInterval)
                waited = true
                // The message carries the token: no need to read it.
                if let box = notice.value, let token = adopted(box, at: storeKey, provider: provider, adopt: adopt, records: false) {
                    metrics.recordMint(.waited, provider: provider)
                    return token
                }
            }
        }
    }

    /// Checks `ended`'s end by itself, after a call that also read the token failed: a command the store refused (one
    /// bad key) leaves it up, and the end is still asked for; a store that cannot be reached refuses the context.
    private func checkEndAlone(_ ended: EndedContexts.Key, at endedStoreKey: String, of context: TokenContext) async throws {
        guard isUp, let found = await attempt(.read, { try await store.endedUntil(at: endedStoreKey) }) else {
            throw TokenGateError(
                .sharedStateUnavailable, "the shared store cannot be reached to check whether \(context) has ended", retryAfterSeconds: 1)
        }
        if let until = found { throw EndedInStore(key: ended, until: until) }
    }

    /// Mints and returns the token, storing the sealed result for as long as it is worth adopting and releasing the
    /// lock from a task of its own; releases the lock also when the mint fails (the others then take it in turn
    /// rather than wait for it to lapse).
    private func mintHoldingLock(
        _ hold: SharedLockHold, storeKey: String, provider: ProviderID, share: Int, refreshBefore: Int64,
        mint: () async throws -> DeliveredToken
    ) async throws -> DeliveredToken {
        let token: DeliveredToken
        do {
            token = try await mint()
        } catch {
            _ = await attempt(.unlock) { try await store.unlock(hold.key, owner: hold.owner) }
            throw error
        }
        // Stored and unlocked in one step (unlocked alone when the token is not worth storing), while the token is on
        // its way to the caller: the others wait for the message, not the caller for the store.
        Task {
            guard let worthKeeping = storable(token, refreshBefore: refreshBefore), let box = seal(token.compact, for: storeKey),
                await admitted(storeKey, of: provider, until: clock.wallSeconds() + worthKeeping.components.seconds, share: share)
            else {
                _ = await attempt(.unlock) { try await store.unlock(hold.key, owner: hold.owner) }
                return
            }
            // A write that failed leaves the lock for the others to take at once, if it can.
            if await attempt(.write, { try await store.setValue(box, at: storeKey, lifetime: worthKeeping, releasing: hold) }) == nil {
                _ = await attempt(.unlock) { try await store.unlock(hold.key, owner: hold.owner) }
            }
        }
        return token
    }

    /// Whether `provider` may store one more token (the one at `storeKey`, kept until `until`): each provider stores
    /// at most `share` (its `cache.maxEntries`) that have not expired, so one tenant's tokens cannot crowd another's out
    /// of the store. A token past the share is still served, from this replica; a store that does not answer leaves
    /// the decision to the write that follows.
    private func admitted(_ storeKey: String, of provider: ProviderID, until: Int64, share: Int) async -> Bool {
        let entry = String(storeKey.split(separator: "{", maxSplits: 1).last ?? Substring(storeKey))
        guard
            let admitted = await attempt(
                .write, { try await store.admit([(entry, until)], now: clock.wallSeconds(), into: tokenIndexKey(provider), capacity: share) })
        else { return true }
        if !admitted { metrics.recordCache(.overShare, provider: provider) }
        return admitted
    }

    /// How long `token` is worth keeping in the store: until it enters the refresh window (after that no replica
    /// adopts it); nil when it is in it already.
    private func storable(_ token: DeliveredToken, refreshBefore: Int64) -> Duration? {
        let worthKeeping = token.expiresAt - refreshBefore - clock.wallSeconds()
        return worthKeeping > 0 ? .seconds(worthKeeping) : nil
    }

    /// The token a value read at `storeKey` holds, when it opens and verifies with more than the refresh window left;
    /// nil otherwise. Only a request's first look is counted and logged (`records`): the looks of a replica waiting
    /// for another's mint would count one poisoned value many times.
    private func adopted(
        _ box: [UInt8], at storeKey: String, provider: ProviderID, adopt: (String) -> Adoption, records: Bool
    ) -> DeliveredToken? {
        guard let compact = open(box, for: storeKey) else {
            guard records else { return nil }
            metrics.recordCache(.rejected, provider: provider)
            logger.warning(
                "a shared cache value did not open (wrong key, tampered or not ours); not served",
                metadata: ["provider": "\(provider)", "reason": "unsealed"])
            return nil
        }
        switch adopt(compact) {
        case .usable(let token):
            if records { metrics.recordCache(.hit, provider: provider) }
            return token
        case .stale:
            if records { metrics.recordCache(.miss, provider: provider) }
            return nil
        case .rejected(let reason):
            guard records else { return nil }
            metrics.recordCache(.rejected, provider: provider)
            logger.warning(
                "a shared cache token failed verification; not served",
                metadata: ["provider": "\(provider)", "reason": "\(reason)"])
            return nil
        }
    }
}
