import Foundation
import Testing
import TokenGateClient

/// What a failure leaves behind for the next caller: an ended context remembered, a rate-limited one cooling down,
/// a refused one's token dropped, and a still-valid token served while the gateway cannot be reached (the table
/// "One error, three clients" in docs/client.md).
@Suite struct TokenProviderFailureTests {
    let trip = TokenContext.trip("trip-42")

    /// Polls `condition` between yields, without sleeping, until it holds; false if it never did.
    private func eventually(_ condition: () async -> Bool) async -> Bool {
        for _ in 0..<100_000 {
            if await condition() { return true }
            await Task.yield()
        }
        return false
    }

    @Test func anEndedContextIsRememberedWithoutAnotherRequestUntilCleared() async throws {
        let clock = ManualClock()
        let transport = TestTransport { _, request in
            request.url.query == "tripId=trip-42"
                ? Fixtures.errorResponse(410, code: "context_ended") : Fixtures.tokenGateBody("token-x", now: clock.now)
        }
        let provider = Fixtures.provider(transport, clock: clock)
        let ended = await #expect(throws: TokenGateClientError.self) { try await provider.token(for: trip) }
        #expect(ended?.code == .contextEnded)
        #expect(ended?.status == 410)

        let remembered = await #expect(throws: TokenGateClientError.self) { try await provider.token(for: trip) }
        #expect(remembered?.code == .contextEnded)
        #expect(remembered?.message.contains("remembered") == true)
        await #expect(throws: TokenGateClientError.self) { try await provider.refresh(trip) }
        #expect(transport.count == 1)

        #expect(try await provider.token(for: .trip("trip-43")) == "token-x")  // other trips are not affected
        await provider.switchTo(.trip("trip-44"))  // switching away does not forget it
        await #expect(throws: TokenGateClientError.self) { try await provider.token(for: trip) }
        #expect(transport.count == 2)

        await provider.clear(trip)
        await #expect(throws: TokenGateClientError.self) { try await provider.token(for: trip) }
        #expect(transport.count == 3)  // asked again after clear(): still ended
    }

    @Test func aContextEndedWhileCachedIsDroppedAtItsBackgroundRefresh() async throws {
        let clock = ManualClock()
        let transport = TestTransport { index, _ in
            index == 0 ? Fixtures.tokenGateBody("token-1", now: clock.now) : Fixtures.errorResponse(410, code: "context_ended")
        }
        let provider = Fixtures.provider(transport, clock: clock)
        #expect(try await provider.token(for: trip) == "token-1")
        clock.advance(by: 3100)  // past refreshAfter: served, refreshed behind it
        #expect(try await provider.token(for: trip) == "token-1")
        #expect(await eventually { await provider.cachedContexts.isEmpty })

        let ended = await #expect(throws: TokenGateClientError.self) { try await provider.token(for: trip) }
        #expect(ended?.code == .contextEnded)
        #expect(transport.count == 2)
    }

    @Test func aLongRetryAfterCoolsTheContextDownUntilItHasPassed() async throws {
        let clock = ManualClock()
        let transport = TestTransport { index, _ in
            index == 0
                ? Fixtures.errorResponse(429, code: "rate_limited", headers: ["Retry-After": "120"])
                : Fixtures.tokenGateBody("token-1", now: clock.now)
        }
        let provider = Fixtures.provider(transport, clock: clock)
        let limited = await #expect(throws: TokenGateClientError.self) { try await provider.token(for: trip) }
        #expect(limited?.retryAfter == 120)

        clock.advance(by: 100)
        let cooling = await #expect(throws: TokenGateClientError.self) { try await provider.token(for: trip) }
        #expect(cooling?.code == .rateLimited)
        #expect(cooling?.retryAfter == 20)
        await #expect(throws: TokenGateClientError.self) { try await provider.refresh(trip) }
        #expect(transport.count == 1)  // not asked before Retry-After has passed
        #expect(try await provider.token(for: .trip("trip-43")) == "token-1")  // other contexts are not cooling

        clock.advance(by: 20)
        #expect(try await provider.token(for: trip).hasPrefix("token-"))
        #expect(transport.count == 3)
    }

    @Test func aServerErrorsLongRetryAfterSurfacesAtOnceWithoutACooldown() async throws {
        let clock = ManualClock()
        let transport = TestTransport { _, _ in
            Fixtures.errorResponse(503, code: "backend_unavailable", headers: ["Retry-After": "10"])
        }
        let provider = Fixtures.provider(transport, clock: clock)
        let unavailable = await #expect(throws: TokenGateClientError.self) { try await provider.token(for: trip) }
        #expect(unavailable?.code == .backendUnavailable)
        #expect(unavailable?.retryAfter == 10)
        #expect(clock.sleeps.isEmpty)
        await #expect(throws: TokenGateClientError.self) { try await provider.token(for: trip) }
        #expect(transport.count == 2)  // only a 429's Retry-After keeps the next caller from asking
    }

    @Test func whileCoolingDownAStillValidCachedTokenIsServedUntilMinimumRemaining() async throws {
        let clock = ManualClock()
        let transport = TestTransport { index, _ in
            index == 0
                ? Fixtures.tokenGateBody("token-1", now: clock.now)
                : Fixtures.errorResponse(429, code: "rate_limited", headers: ["Retry-After": "600"])
        }
        let provider = Fixtures.provider(transport, clock: clock)
        #expect(try await provider.token(for: trip) == "token-1")
        clock.advance(by: 3350)  // 250 s left: below the margin, so the caller waits for a fetch, which is refused
        #expect(try await provider.token(for: trip) == "token-1")
        clock.advance(by: 60)
        #expect(try await provider.token(for: trip) == "token-1")
        #expect(transport.count == 2)

        clock.advance(by: 80)  // 110 s left: less than minimumRemaining (120 s)
        let limited = await #expect(throws: TokenGateClientError.self) { try await provider.token(for: trip) }
        #expect(limited?.code == .rateLimited)
        #expect(limited?.retryAfter == 460)
        #expect(transport.count == 2)
    }

    @Test(arguments: [false, true])
    func aFailedFetchBelowTheMarginServesTheCachedTokenUntilMinimumRemaining(offline: Bool) async throws {
        let clock = ManualClock()
        let transport = TestTransport { index, _ in
            if index == 0 { return Fixtures.tokenGateBody("token-1", now: clock.now) }
            if offline { throw NetworkDown() }
            return Fixtures.errorResponse(503, code: "backend_unavailable")
        }
        let provider = Fixtures.provider(transport, clock: clock)
        #expect(try await provider.token(for: trip) == "token-1")
        clock.advance(by: 3400)  // 200 s left
        #expect(try await provider.token(for: trip) == "token-1")  // three attempts failed: the cached token serves
        #expect(transport.count == 4)
        #expect(clock.sleeps == [0.5, 1])

        clock.advance(by: 10)
        #expect(try await provider.token(for: trip) == "token-1")  // within 30 s of that failure: not asked again
        #expect(transport.count == 4)
        clock.advance(by: 25)
        #expect(try await provider.token(for: trip) == "token-1")  // asked again, failed again, still 163 s left
        #expect(transport.count == 7)

        clock.advance(by: 50)  // 111.5 s left
        let failure = await #expect(throws: TokenGateClientError.self) { try await provider.token(for: trip) }
        #expect(failure?.code == (offline ? .network : .backendUnavailable))
        #expect(transport.count == 10)
    }

    @Test(arguments: [
        (400, "invalid_request", TokenGateClientError.Code.invalidRequest),
        (401, "unauthenticated", .unauthenticated),
        (403, "forbidden", .forbidden),
        (404, "unknown_provider", .notFound),
        (404, "no_token_for_context", .noTokenForContext),
    ])
    func theGatewaysRefusalsDropTheCachedToken(status: Int, serverCode: String, code: TokenGateClientError.Code)
        async throws
    {
        let clock = ManualClock()
        let transport = TestTransport { index, _ in
            index == 0 ? Fixtures.tokenGateBody("token-1", now: clock.now) : Fixtures.errorResponse(status, code: serverCode)
        }
        let provider = Fixtures.provider(transport, clock: clock)
        #expect(try await provider.token(for: trip) == "token-1")
        let refused = await #expect(throws: TokenGateClientError.self) { try await provider.refresh(trip) }
        #expect(refused?.code == code)
        #expect(await provider.cachedContexts.isEmpty)
        await #expect(throws: TokenGateClientError.self) { try await provider.token(for: trip) }
        #expect(transport.count == 3)  // never retried; the next caller asks again and is refused too
    }

    @Test func anUnusableAnswerIsNotRetriedAndTheCachedTokenServesUntilMinimumRemaining() async throws {
        let clock = ManualClock()
        let transport = TestTransport { index, _ in
            index == 0
                ? Fixtures.tokenGateBody("token-1", now: clock.now)
                : HTTPTransportResponse(status: 200, body: Data("<html>captive portal</html>".utf8))
        }
        let provider = Fixtures.provider(transport, clock: clock)
        #expect(try await provider.token(for: trip) == "token-1")
        clock.advance(by: 3100)
        let unusable = await #expect(throws: TokenGateClientError.self) { try await provider.refresh(trip) }
        #expect(unusable?.code == .invalidResponse)
        #expect(transport.count == 2)
        #expect(try await provider.token(for: trip) == "token-1")  // kept; not asked again within 30 s
        #expect(transport.count == 2)

        clock.advance(by: 300)  // 200 s left: below the margin, the caller's own fetch fails the same way
        #expect(try await provider.token(for: trip) == "token-1")
        #expect(transport.count == 3)
        clock.advance(by: 90)  // 110 s left
        let late = await #expect(throws: TokenGateClientError.self) { try await provider.token(for: trip) }
        #expect(late?.code == .invalidResponse)
        #expect(transport.count == 4)
    }

    @Test func aFailingCredentialSourceSendsNothingAndTheCachedTokenServes() async throws {
        struct SessionLocked: Error {}
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        let asked = Counter()
        let provider = TokenProvider(configuration: Fixtures.configuration(), transport: transport, clock: clock) {
            guard asked.increment() == 1 else { throw SessionLocked() }
            return "s3cret-session"
        }
        #expect(try await provider.token(for: trip) == "token-1")
        clock.advance(by: 3400)  // 200 s left
        #expect(try await provider.token(for: trip) == "token-1")
        #expect(transport.count == 1)
        clock.advance(by: 90)
        let locked = await #expect(throws: TokenGateClientError.self) { try await provider.token(for: trip) }
        #expect(locked?.code == .credentialUnavailable)
        #expect(transport.count == 1)
    }
}
