import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

@Suite struct CacheTests {
    let clock = ManualClock(wallSeconds: 1_700_000_000)
    let source: TestTokenSource

    init() { source = TestTokenSource(clock: clock) }

    func makeCache(maxEntries: Int = 100) -> TokenCache<String, TestToken> {
        TokenCache(policy: TokenCachePolicy(maxEntries: maxEntries), clock: clock.gatewayClock)
    }

    func get(_ cache: TokenCache<String, TestToken>, _ key: String = "trip-1") async throws -> (
        value: TestToken, outcome: TokenCacheOutcome
    ) {
        try await cache.value(for: key) { [source] in try await source.fetch() }
    }

    @Test func hitReturnsTheCachedTokenWithoutFetching() async throws {
        let cache = makeCache()
        let first = try await get(cache)
        clock.advance(by: .seconds(60))
        let second = try await get(cache)
        #expect(first.outcome == .miss)
        #expect(second.outcome == .hit)
        #expect(second.value == first.value)
        #expect(source.calls == 1)
        #expect(cache.count == 1)
    }

    @Test func aCallerWithABoundIsNeverServedALaterExpiryAndItsFetchReplacesIt() async throws {
        let cache = makeCache()
        let open = try await get(cache)
        let bound = clock.now + 900
        // The hour-long token is not served to a caller bounded at 15 minutes: its own fetch (which honours the
        // bound) replaces it, for every caller.
        let bounded = try await cache.value(for: "trip-1", notAfter: bound) { [source, clock] in
            TestToken(serial: 100 + source.calls, expiresAt: min(clock.now + 3_600, bound))
        }
        #expect(bounded.outcome == .miss)
        #expect(bounded.value.expiresAt == bound)
        #expect(try await get(cache).value == bounded.value)
        // A bound at or after the cached expiry is served from the cache.
        let later = try await cache.value(for: "trip-1", notAfter: bound) { TestToken(serial: -1, expiresAt: 0) }
        #expect(later.outcome == .hit)
        #expect(later.value == bounded.value)
        #expect(open.value.expiresAt > bound)
        #expect(cache.count == 1)
    }

    @Test func concurrentMissesForOneKeyShareOneFetch() async throws {
        let cache = makeCache()
        let gate = AsyncGate()
        source.gate = gate
        let results = try await withThrowingTaskGroup(of: (value: TestToken, outcome: TokenCacheOutcome).self) {
            group in
            for _ in 0..<100 { group.addTask { try await get(cache) } }
            try await yieldUntil { cache.waiterCount(for: "trip-1") == 100 }
            gate.open()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(source.calls == 1)
        #expect(results.count == 100)
        #expect(results.allSatisfy { $0.value == TestToken(serial: 1, expiresAt: clock.now + 3_600) })
        #expect(results.allSatisfy { $0.outcome == .miss })
    }

    @Test func anErrorIsSharedByThatFlightAndNotCached() async throws {
        let cache = makeCache()
        let gate = AsyncGate()
        source.gate = gate
        source.isFailing = true
        let errors = await withTaskGroup(of: (any Error)?.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    do {
                        _ = try await get(cache)
                        return nil
                    } catch { return error }
                }
            }
            try? await yieldUntil { cache.waiterCount(for: "trip-1") == 10 }
            gate.open()
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(errors.count == 10)
        #expect(errors.allSatisfy { ($0 as? TestBackendError) == TestBackendError(attempt: 1) })
        #expect(source.calls == 1)
        #expect(cache.count == 0)

        source.isFailing = false
        let next = try await get(cache)
        #expect(next.outcome == .miss)
        #expect(next.value.serial == 2)
    }

    @Test func insideTheRefreshWindowTheOldTokenIsServedWhileOneBackgroundFetchRuns() async throws {
        let cache = makeCache()
        let old = try await get(cache).value
        clock.advance(by: .seconds(3_600 - 599))  // 599 s left: inside refreshBefore (600), above minRemaining
        let gate = AsyncGate()
        source.gate = gate

        let first = try await get(cache)
        let second = try await get(cache)
        #expect(first.value == old && first.outcome == .refreshingAhead)
        #expect(second.value == old && second.outcome == .refreshingAhead)
        gate.open()
        await cache.waitForRefreshes()

        #expect(source.calls == 2)
        let refreshed = try await get(cache)
        #expect(refreshed.outcome == .hit)
        #expect(refreshed.value == TestToken(serial: 2, expiresAt: clock.now + 3_600))
        #expect(source.calls == 2)
    }

    /// What the event loop may serve without waiting: a hit or a value whose refresh already runs; never a value
    /// whose refresh is due (that request takes the full path, which starts it), and nothing it looks at starts a
    /// fetch.
    @Test func aServableValueIsAHitOrARefreshAlreadyRunningAndLookingStartsNothing() async throws {
        let cache = makeCache()
        #expect(cache.servableValue(for: "trip-1") == nil)
        #expect(source.calls == 0)
        let token = try await get(cache).value
        #expect(cache.servableValue(for: "trip-1")?.value == token)
        #expect(cache.servableValue(for: "trip-1")?.outcome == .hit)

        clock.advance(by: .seconds(3_600 - 599))  // inside the refresh window
        #expect(cache.servableValue(for: "trip-1") == nil)
        await cache.waitForRefreshes()
        #expect(source.calls == 1)

        let gate = AsyncGate()
        source.gate = gate
        #expect(try await get(cache).outcome == .refreshingAhead)
        let served = cache.servableValue(for: "trip-1")
        #expect(served?.value == token && served?.outcome == .refreshingAhead)
        gate.open()
        await cache.waitForRefreshes()
        #expect(cache.servableValue(for: "trip-1")?.value.serial == 2)

        clock.advance(by: .seconds(3_600 - 299))  // below minRemaining: never served
        #expect(cache.servableValue(for: "trip-1") == nil)
        #expect(source.calls == 2)
    }

    @Test(arguments: [(secondsLeft: 301, isServed: true), (300, true), (299, false), (0, false), (-10, false)])
    func belowMinRemainingTheCallerWaitsForAFreshToken(secondsLeft: Int64, isServed: Bool) async throws {
        let cache = makeCache()
        let old = try await get(cache).value
        clock.advance(by: .seconds(3_600 - secondsLeft))
        let result = try await get(cache)
        #expect((result.value == old) == isServed)
        #expect(result.outcome == (isServed ? .refreshingAhead : .miss))
        await cache.waitForRefreshes()
        #expect(source.calls == 2)
    }

    /// Below `minRemaining` the backend is asked; while it fails, a token above `staleIfErrorFloor` (60 s) is the
    /// answer rather than the error, and is served without asking again until the retry interval has passed.
    @Test func belowMinRemainingAFailingBackendIsAnsweredWithTheTokenAboveTheFloor() async throws {
        let cache = makeCache()
        let old = try await get(cache).value
        clock.advance(by: .seconds(3_600 - 299))
        source.isFailing = true
        #expect(try await get(cache) == (old, .servedAfterRefreshFailure))
        #expect(source.calls == 2)
        // The fast path serves it too, and nothing is asked of the backend within the retry interval.
        #expect(cache.servableValue(for: "trip-1")?.outcome == .servedAfterRefreshFailure)
        clock.advance(by: .seconds(29))
        #expect(try await get(cache) == (old, .servedAfterRefreshFailure))
        #expect(source.calls == 2)
        // Then the backend is asked again: back, it answers with a fresh token.
        clock.advance(by: .seconds(1))
        source.isFailing = false
        #expect(try await get(cache) == (TestToken(serial: 3, expiresAt: clock.now + 3_600), .miss))
    }

    @Test func belowTheStaleFloorAFailingBackendFailsTheRequest() async throws {
        let cache = makeCache()
        _ = try await get(cache)
        clock.advance(by: .seconds(3_600 - 59))
        source.isFailing = true
        await #expect(throws: TestBackendError(attempt: 2)) { try await get(cache) }
        #expect(cache.count == 0)
    }

    @Test func aStaleTokenOnlyAnswersAFailureAndAFloorAtMinRemainingSwitchesItOff() async throws {
        // Above the floor but the backend answers: the fresh token, never the stale one.
        let cache = makeCache()
        _ = try await get(cache)
        clock.advance(by: .seconds(3_600 - 200))
        #expect(try await get(cache).outcome == .miss)
        // With the floor at minRemaining, nothing below minRemaining is ever served.
        let strict = TokenCache<String, TestToken>(policy: TokenCachePolicy(staleIfErrorFloor: .seconds(300)), clock: clock.gatewayClock)
        _ = try await get(strict)
        clock.advance(by: .seconds(3_600 - 200))
        source.isFailing = true
        await #expect(throws: TestBackendError.self) { try await get(strict) }
    }

    @Test func aFailedRefreshKeepsServingTheCachedTokenAndRetriesAfterTheInterval() async throws {
        let cache = makeCache()
        let old = try await get(cache).value
        clock.advance(by: .seconds(3_600 - 590))
        source.isFailing = true

        #expect(try await get(cache) == (old, .refreshingAhead))
        await cache.waitForRefreshes()
        #expect(source.calls == 2)

        // Within refreshRetryInterval (30 s) no new refresh starts; the cached token is still served.
        clock.advance(by: .seconds(29))
        #expect(try await get(cache) == (old, .servedAfterRefreshFailure))
        await cache.waitForRefreshes()
        #expect(source.calls == 2)

        clock.advance(by: .seconds(1))
        source.isFailing = false
        #expect(try await get(cache) == (old, .refreshingAhead))
        await cache.waitForRefreshes()
        #expect(source.calls == 3)
        #expect(try await get(cache) == (TestToken(serial: 3, expiresAt: clock.now + 3_600), .hit))
    }

    @Test func aFetchedTokenBelowMinRemainingGoesToItsWaitersButIsNotCached() async throws {
        let cache = makeCache()
        source.lifetime = 120
        let first = try await get(cache)
        #expect(first == (TestToken(serial: 1, expiresAt: clock.now + 120), .miss))
        #expect(cache.count == 0)
        #expect(try await get(cache).value.serial == 2)
    }

    @Test func aShortLivedTokenIsNotRefreshedOnEveryRequest() async throws {
        let cache = makeCache()
        source.lifetime = 400  // above minRemaining (300), inside refreshBefore (600)
        _ = try await get(cache)
        #expect(try await get(cache).outcome == .hit)
        await cache.waitForRefreshes()
        #expect(source.calls == 1)
    }

    @Test func theLeastRecentlyUsedEntryIsEvictedAtMaxEntries() async throws {
        let cache = makeCache(maxEntries: 3)
        for key in ["a", "b", "c"] { _ = try await get(cache, key) }
        #expect(try await get(cache, "a").outcome == .hit)  // order now a, c, b: b is least recently used
        _ = try await get(cache, "d")
        #expect(cache.count == 3)
        #expect(source.calls == 4)

        for key in ["a", "c", "d"] { #expect(try await get(cache, key).outcome == .hit) }
        #expect(try await get(cache, "b").outcome == .miss)
        #expect(source.calls == 5)
        #expect(cache.count == 3)
    }

    @Test func aFetchFinishingAfterItsKeyWasEvictedKeepsTheBound() async throws {
        let cache = makeCache(maxEntries: 1)
        let gate = AsyncGate()
        source.gate = gate
        let pending = Task { try await get(cache, "a") }
        // The fetch must have started (and taken the gate) before the gate is cleared for "b"'s fetch.
        try await yieldUntil { cache.waiterCount(for: "a") == 1 && source.calls == 1 }
        source.gate = nil
        _ = try await get(cache, "b")
        gate.open()
        _ = try await pending.value
        #expect(cache.count == 1)
        #expect(try await get(cache, "a").outcome == .hit)
        #expect(try await get(cache, "b").outcome == .miss)
        #expect(cache.count == 1)
    }

    @Test func aFetchInFlightWhenItsKeyIsRemovedAnswersButIsNotCached() async throws {
        let cache = makeCache()
        let gate = AsyncGate()
        source.gate = gate
        let pending = Task { try await get(cache) }
        try await yieldUntil { cache.waiterCount(for: "trip-1") == 1 }
        cache.removeValue(for: "trip-1")
        gate.open()
        #expect(try await pending.value.value.serial == 1)
        #expect(cache.count == 0)
    }

    @Test func cancellingOneWaiterDoesNotFailTheOthers() async throws {
        let cache = makeCache()
        let gate = AsyncGate()
        source.gate = gate
        let waiters = (0..<3).map { _ in Task { try await get(cache) } }
        try await yieldUntil { cache.waiterCount(for: "trip-1") == 3 }

        waiters[0].cancel()
        // The cancelled waiter leaves at once, while the fetch is still blocked.
        await #expect(throws: CancellationError.self) { try await waiters[0].value }
        #expect(cache.waiterCount(for: "trip-1") == 2)

        gate.open()
        for waiter in waiters.dropFirst() {
            #expect(try await waiter.value == (TestToken(serial: 1, expiresAt: clock.now + 3_600), .miss))
        }
        #expect(source.calls == 1)
        #expect(cache.count == 1)
    }

    @Test func aWaiterCancelledBeforeItArrivesDoesNotStartAFetch() async throws {
        let cache = makeCache()
        let gate = AsyncGate()
        let cancelled = Task {
            await gate.wait()
            return try await get(cache)
        }
        cancelled.cancel()
        gate.open()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        await cache.waitForRefreshes()
        #expect(source.calls == 0)
    }

    @Test func removeAllEmptiesTheCache() async throws {
        let cache = makeCache()
        for key in ["a", "b"] { _ = try await get(cache, key) }
        cache.removeAll()
        #expect(cache.count == 0)
        #expect(try await get(cache, "a").outcome == .miss)
    }
}

/// Refresh-ahead jitter: each entry starts its refresh somewhere in the first part of the window, never earlier
/// than `refreshBefore` and never past `minRemaining`.
@Suite struct CacheRefreshJitterTests {
    let clock = ManualClock(wallSeconds: 1_700_000_000)
    let source: TestTokenSource

    init() { source = TestTokenSource(clock: clock) }

    @Test func entriesCachedTogetherRefreshAtDifferentTimesInsideTheWindow() async throws {
        // Window 600 s → 300 s; refreshes start between 600 s and 400 s before expiry.
        let cache = TokenCache<String, TestToken>(
            policy: TokenCachePolicy(minRemaining: .seconds(300), refreshBefore: .seconds(600), refreshJitter: .seconds(200)),
            clock: clock.gatewayClock)
        let keys = (0..<60).map { "trip-\($0)" }
        for key in keys { _ = try await cache.value(for: key) { [source] in try await source.fetch() } }
        func outcomes() async throws -> [TokenCacheOutcome] {
            var outcomes: [TokenCacheOutcome] = []
            for key in keys { outcomes.append(try await cache.value(for: key) { [source] in try await source.fetch() }.outcome) }
            await cache.waitForRefreshes()
            return outcomes
        }
        clock.advance(by: .seconds(3_600 - 601))  // 601 s left: before any entry's window
        #expect(try await outcomes().allSatisfy { $0 == .hit })
        clock.advance(by: .seconds(101))  // 500 s left: some entries have started, others not yet
        let midway = try await outcomes()
        #expect(midway.contains(.hit))
        #expect(midway.contains(.refreshingAhead))
        clock.advance(by: .seconds(101))  // 399 s left: past every entry's delay (the refreshed ones are fresh)
        let refreshedBefore = source.calls
        _ = try await outcomes()
        #expect(source.calls - refreshedBefore == 60 - midway.filter { $0 == .refreshingAhead }.count)
    }
}
