import Foundation
import Testing
import TokenGateClient

@Suite struct TokenProviderCachingTests {
    let trip = TokenContext.trip("trip-42")

    @Test(arguments: [0.0, 1, 1800, 2999])
    func reusesCachedTokenBeforeRefreshPoint(secondsLater: TimeInterval) async throws {
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        let provider = Fixtures.provider(transport, clock: clock)

        #expect(try await provider.token(for: trip) == "token-1")
        clock.advance(by: secondsLater)
        #expect(try await provider.token(for: trip) == "token-1")
        #expect(try await provider.token(for: trip) == "token-1")
        #expect(transport.count == 1)
    }

    @Test func servesOldTokenWhileOneBackgroundRefreshRunsThenTheNewOne() async throws {
        let clock = ManualClock()
        let gate = Gate()
        let transport = TestTransport { index, _ in
            if index == 1 { await gate.wait() }
            return Fixtures.tokenGateBody("token-\(index + 1)", now: clock.now)
        }
        let provider = Fixtures.provider(transport, clock: clock)
        #expect(try await provider.token(for: trip) == "token-1")

        clock.advance(by: 3100)  // past refreshAfter (3000 s), before the margin (3300 s)
        #expect(try await provider.token(for: trip) == "token-1")
        await transport.waitForRequest(1)
        #expect(try await provider.token(for: trip) == "token-1")  // in flight: served, not fetched again
        #expect(transport.count == 2)

        await gate.open()
        var token = "token-1"
        for _ in 0..<100_000 where token == "token-1" {
            token = try await provider.token(for: trip)
            await Task.yield()
        }
        #expect(token == "token-2")
        #expect(transport.count == 2)
    }

    @Test(.bug(id: "client-refresh-inside-gateway-window", "a token already due was left to block callers at the margin"))
    func aTokenAlreadyDueIsFetchedAgainSoonButNotOnEveryCall() async throws {
        let clock = ManualClock()
        // The gateway is refreshing behind this token: it has 500 s left, so it is already past refreshAfter.
        let transport = TestTransport { index, _ in Fixtures.tokenGateBody("token-\(index + 1)", now: clock.now, lifetime: 500) }
        let provider = Fixtures.provider(transport, clock: clock)
        #expect(try await provider.token(for: trip) == "token-1")
        clock.advance(by: 10)
        #expect(try await provider.token(for: trip) == "token-1")
        #expect(transport.count == 1)  // paced: not on every call
        clock.advance(by: 25)  // 35 s after receipt: past the 30 s pace, long before the margin (200 s)
        #expect(try await provider.token(for: trip) == "token-1")
        await transport.waitForRequest(1)
        var token = "token-1"
        for _ in 0..<100_000 where token == "token-1" {
            token = try await provider.token(for: trip)
            await Task.yield()
        }
        #expect(token == "token-2")
    }

    @Test func waitsForFreshTokenOnceInsideTheMargin() async throws {
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        let provider = Fixtures.provider(transport, clock: clock)
        #expect(try await provider.token(for: trip) == "token-1")

        clock.advance(by: 3300)  // exactly 5 minutes left: no longer served
        #expect(try await provider.token(for: trip) == "token-2")
        #expect(try await provider.token(for: trip) == "token-2")
        #expect(transport.count == 2)
    }

    @Test func expiredTokenIsNeverServed() async throws {
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        let provider = Fixtures.provider(transport, clock: clock)
        _ = try await provider.token(for: trip)
        clock.advance(by: 7200)
        #expect(try await provider.token(for: trip) == "token-2")
    }

    @Test func hundredConcurrentCallersShareOneFetch() async throws {
        let clock = ManualClock()
        let gate = Gate()
        let transport = TestTransport { index, _ in
            await gate.wait()
            return Fixtures.tokenGateBody("token-\(index + 1)", now: clock.now)
        }
        let provider = Fixtures.provider(transport, clock: clock)
        let trip = self.trip

        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 { group.addTask { try await provider.token(for: trip) } }
            await transport.waitForRequest(0)
            await gate.open()
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(tokens.count == 100)
        #expect(Set(tokens) == ["token-1"])
        #expect(transport.count == 1)
    }

    @Test func switchingTripDropsThePreviousTripAndFetchesAnew() async throws {
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        let provider = Fixtures.provider(transport, clock: clock)
        let vehicle = TokenContext.vehicle("vehicle-7")
        #expect(try await provider.token(for: trip) == "token-1")
        #expect(try await provider.token(for: vehicle) == "token-2")

        await provider.switchTo(.trip("trip-43"))
        #expect(await provider.cachedContexts == [vehicle])
        #expect(try await provider.token(for: .trip("trip-43")) == "token-3")
        #expect(try await provider.token(for: trip) == "token-4")
        #expect(transport.requests.last?.url.query == "tripId=trip-42")
    }

    @Test func keepsAtMostTheConfiguredNumberOfContextsDroppingLeastRecentlyUsed() async throws {
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        let provider = Fixtures.provider(transport, clock: clock, maximumContexts: 2)
        let (a, b, c) = (TokenContext.trip("a"), TokenContext.trip("b"), TokenContext.trip("c"))

        _ = try await provider.token(for: a)
        _ = try await provider.token(for: b)
        _ = try await provider.token(for: a)  // a is now the most recently used
        _ = try await provider.token(for: c)
        #expect(await provider.cachedContexts == [a, c])
        #expect(transport.count == 3)

        _ = try await provider.token(for: b)  // dropped: fetched again
        #expect(transport.count == 4)
        #expect(await provider.cachedContexts.count == 2)
    }

    @Test func clearRetainAndClearAllDropTokens() async throws {
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        let provider = Fixtures.provider(transport, clock: clock)
        let (a, b, c) = (TokenContext.trip("a"), TokenContext.vehicle("b"), TokenContext.task("c"))
        for context in [a, b, c] { _ = try await provider.token(for: context) }

        await provider.clear(a)
        #expect(await provider.cachedContexts == [b, c])
        await provider.retain(only: [c])
        #expect(await provider.cachedContexts == [c])
        await provider.clearAll()
        #expect(await provider.cachedContexts.isEmpty)
        _ = try await provider.token(for: c)
        #expect(transport.count == 4)
    }

    @Test func fetchForAClearedContextAnswersItsCallerButIsNotCached() async throws {
        let clock = ManualClock()
        let gate = Gate()
        let transport = TestTransport { index, _ in
            if index == 0 { await gate.wait() }
            return Fixtures.tokenGateBody("token-\(index + 1)", now: clock.now)
        }
        let provider = Fixtures.provider(transport, clock: clock)
        let trip = self.trip
        async let first = provider.token(for: trip)
        await transport.waitForRequest(0)
        await provider.clear(trip)
        await gate.open()
        #expect(try await first == "token-1")
        #expect(await provider.cachedContexts.isEmpty)
    }

    @Test func explicitRefreshFetchesEvenWhenCached() async throws {
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        let provider = Fixtures.provider(transport, clock: clock)
        _ = try await provider.token(for: trip)
        let fresh = try await provider.refresh(trip)
        #expect(fresh.token == "token-2")
        #expect(fresh.context == trip)
        #expect(try await provider.token(for: trip) == "token-2")
    }

    @Test func backgroundRefreshRejectedWith401DropsTheTokenAndSurfacesTheError() async throws {
        let clock = ManualClock()
        let transport = TestTransport { index, _ in
            index == 0
                ? Fixtures.tokenGateBody("token-1", now: clock.now)
                : Fixtures.errorResponse(401, code: "unauthenticated")
        }
        let provider = Fixtures.provider(transport, clock: clock)
        _ = try await provider.token(for: trip)
        clock.advance(by: 3100)

        var failure: TokenGateClientError?
        for _ in 0..<100_000 where failure == nil {
            do {
                #expect(try await provider.token(for: trip) == "token-1")
                await Task.yield()
            } catch let error as TokenGateClientError {
                failure = error
            }
        }
        #expect(failure?.code == .unauthenticated)
        #expect(transport.count == 3)  // first fetch, background refresh, the caller's own fetch
    }

    @Test(.timeLimit(.minutes(5))) func failedBackgroundRefreshKeepsServingAndWaitsBeforeTryingAgain() async throws {
        let clock = ManualClock()
        let transport = TestTransport { index, _ in
            index == 0
                ? Fixtures.tokenGateBody("token-1", now: clock.now)
                : Fixtures.errorResponse(503, code: "backend_unavailable")
        }
        let policy = RetryPolicy(maximumAttempts: 2, jitter: 0)
        let provider = Fixtures.provider(transport, clock: clock, retryPolicy: policy)
        _ = try await provider.token(for: trip)
        clock.advance(by: 3100)

        #expect(try await provider.token(for: trip) == "token-1")
        await transport.waitForRequest(2)  // the background refresh's second and last attempt
        let failedAt = clock.now
        for _ in 0..<1000 {  // while it fails and in the 30 s after: the old token, no new fetch
            #expect(try await provider.token(for: trip) == "token-1")
            await Task.yield()
        }
        #expect(transport.count == 3)

        for _ in 0..<150 where transport.count < 4 {  // one second at a time, still outside the 5-minute margin
            clock.advance(by: 1)
            #expect(try await provider.token(for: trip) == "token-1")
            await Task.yield()
        }
        await transport.waitForRequest(3)
        #expect(clock.now.timeIntervalSince(failedAt) >= 30)
    }

    @Test(.timeLimit(.minutes(5))) func cancelledCallerStopsWaitingWhileTheSharedFetchFillsTheCache() async throws {
        let clock = ManualClock()
        let gate = Gate()
        let transport = TestTransport { index, _ in
            await gate.wait()
            return Fixtures.tokenGateBody("token-\(index + 1)", now: clock.now)
        }
        let provider = Fixtures.provider(transport, clock: clock)
        let trip = self.trip
        let impatient = Task { try await provider.token(for: trip) }
        await transport.waitForRequest(0)
        impatient.cancel()
        await #expect(throws: CancellationError.self) { try await impatient.value }

        await gate.open()
        #expect(try await provider.token(for: trip) == "token-1")
        #expect(transport.count == 1)
    }
}
