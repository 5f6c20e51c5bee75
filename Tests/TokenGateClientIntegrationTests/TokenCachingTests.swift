import Foundation
import Testing
import TokenGateClient
import TokenGateTesting

/// The client's cache against the real gateway: reuse, refresh-ahead, single flight, trip switch. Time moves only
/// when a test advances the one ManualClock both sides read.
@Suite(.timeLimit(.minutes(5))) struct TokenCachingTests {
    @Test func reusesItsTokenUntilTheRefreshMarginThenFetchesAFreshOne() async throws {
        let fixture = try ClientGatewayFixture()
        try await fixture.withGateway { gateway in
            let client = try fixture.client(of: gateway)
            let first = try await client.provider.token(for: .trip("trip-42"))
            let second = try await client.provider.token(for: .trip("trip-42"))
            #expect(second == first)
            #expect(client.transport.requestCount == 1)
            #expect(fixture.probe.calls == 1)
            #expect(ClientGatewayFixture.tripClaim(of: first) == "trip-42")

            // 30 minutes in: well inside the token's life, and before its refreshAfter: no request at all.
            fixture.clock.advance(by: .seconds(30 * 60))
            #expect(try await client.provider.token(for: .trip("trip-42")) == first)
            #expect(client.transport.requestCount == 1)

            // 56 minutes in: 4 minutes left, under the 5-minute margin: the caller waits for a fresh token.
            fixture.clock.advance(by: .seconds(26 * 60))
            let fresh = try await client.provider.fleetEngineToken(for: .trip("trip-42"))
            #expect(fresh.token != first)
            #expect(fresh.expiresAt == fixture.clock.date(plus: 3600))
            #expect(client.transport.requestCount == 2)
            #expect(fixture.probe.calls == 2)
        }
    }

    @Test func refreshesAheadWhileServingTheCachedToken() async throws {
        // The gateway itself never hands out less than 9 minutes, so the client's early fetch gets a new token.
        let fixture = try ClientGatewayFixture(cache: "{ minRemaining: 9m, refreshBefore: 10m }")
        try await fixture.withGateway { gateway in
            let client = try fixture.client(of: gateway)
            let first = try await client.provider.fleetEngineToken(for: .trip("trip-42"))
            // The gateway's refreshAfter is expiresAt − 10 minutes; the client keeps that lead time.
            #expect(first.refreshAfter == first.expiresAt.addingTimeInterval(-600))

            // 52 minutes in: past refreshAfter, 8 minutes left (more than the margin): the cached token comes back
            // at once and one background fetch starts.
            fixture.clock.advance(by: .seconds(52 * 60))
            #expect(try await client.provider.token(for: .trip("trip-42")) == first.token)
            #expect(try await client.provider.token(for: .trip("trip-42")) == first.token)
            // The background fetch runs in a task of its own: its request is sent a moment later (under
            // ThreadSanitizer, CI saw it not yet sent when the second call returned).
            #expect(try await eventually { client.transport.requestCount == 2 })

            let refreshed = try await client.tokenAfterBackgroundFetch(
                for: .trip("trip-42"), responses: 2, receivedAfter: first.receivedAt)
            #expect(refreshed.token != first.token)
            #expect(refreshed.expiresAt == fixture.clock.date(plus: 3600))
            #expect(try await client.provider.token(for: .trip("trip-42")) == refreshed.token)
            #expect(client.transport.requestCount == 2)
            #expect(fixture.probe.calls == 2)
        }
    }

    /// With the gateway's default cache (refresh-ahead from 10 minutes, as the client's), the client's early fetch
    /// lands in the gateway's own refresh window and gets the old token back. The client must still end up with a
    /// new token before its margin, or callers block on the network exactly when refresh-ahead should spare them.
    @Test func refreshAheadAgainstTheGatewaysDefaultCacheYieldsANewTokenBeforeTheMargin() async throws {
        let fixture = try ClientGatewayFixture()
        try await fixture.withGateway { gateway in
            let client = try fixture.client(of: gateway)
            let first = try await client.provider.fleetEngineToken(for: .trip("trip-42"))
            fixture.clock.advance(by: .seconds(52 * 60))
            #expect(try await client.provider.token(for: .trip("trip-42")) == first.token)
            var latest = try await client.tokenAfterBackgroundFetch(
                for: .trip("trip-42"), responses: 2, receivedAfter: first.receivedAt)
            await gateway.waitForGatewayRefreshes()  // the gateway now holds a new token

            // Callers keep coming every 30 seconds until one second before the margin (55 minutes in).
            while fixture.clock.now < Int64(first.expiresAt.timeIntervalSince1970) - 300 - 30 {
                fixture.clock.advance(by: .seconds(30))
                let sent = client.transport.requestCount
                latest = try await client.provider.fleetEngineToken(for: .trip("trip-42"))
                if client.transport.requestCount > sent {
                    latest = try await client.tokenAfterBackgroundFetch(
                        for: .trip("trip-42"), responses: sent + 1, receivedAfter: latest.receivedAt)
                }
            }
            let renewed = latest.token != first.token  // compared first: a failure message must not print tokens
            #expect(renewed, "still the old token 30 s before the margin: the next callers block on the network")
        }
    }

    @Test func oneHundredConcurrentCallersOnAColdContextSendOneRequest() async throws {
        let fixture = try ClientGatewayFixture()
        try await fixture.withGateway { gateway in
            let client = try fixture.client(of: gateway)
            let provider = client.provider
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<100 { group.addTask { try await provider.token(for: .trip("trip-42")) } }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(tokens.count == 100)
            #expect(Set(tokens).count == 1)
            #expect(client.transport.requestCount == 1)
            #expect(fixture.probe.calls == 1)
        }
    }

    @Test func switchingTripsFetchesTheNewTripAndForgetsTheOld() async throws {
        let fixture = try ClientGatewayFixture()
        try await fixture.withGateway { gateway in
            let client = try fixture.client(of: gateway)
            let tripA = try await client.provider.token(for: .trip("trip-a"))
            #expect(await client.provider.cachedContexts == [.trip("trip-a")])

            await client.provider.switchTo(.trip("trip-b"))
            #expect(await client.provider.cachedContexts.isEmpty)
            let tripB = try await client.provider.token(for: .trip("trip-b"))
            #expect(tripB != tripA)
            #expect(ClientGatewayFixture.tripClaim(of: tripB) == "trip-b")
            #expect(await client.provider.cachedContexts == [.trip("trip-b")])

            // trip-a was dropped by the client: asking again goes to the gateway (which still caches it).
            #expect(try await client.provider.token(for: .trip("trip-a")) == tripA)
            #expect(client.transport.queries == ["tripId=trip-a", "tripId=trip-b", "tripId=trip-a"])
            #expect(fixture.probe.calls == 2)
        }
    }
}

extension ManualClock {
    /// The shared clock's current time plus `seconds`, as the client sees dates.
    func date(plus seconds: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(now + seconds)) }
}
