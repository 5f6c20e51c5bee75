import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

@Suite struct CachingTests {
    static let path = "/v1/providers/acme-rides/tokens/consumer?tripId=trip-42"

    @Test func oneHundredConcurrentColdRequestsMakeOneSigningCall() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let tokens = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<100 {
                    group.addTask { try await gateway.get(Self.path, bearer: GatewayFixture.apiKey).json["token"]?.stringValue }
                }
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(tokens.count == 100)
            #expect(Set(tokens).count == 1)
            #expect(tokens.allSatisfy { $0 != nil })
            #expect(fixture.probe.calls == 1)
        }
    }

    @Test func refreshesAheadWhileServingAndNeverServesBelowMinRemaining() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let first = try await gateway.get(Self.path, bearer: GatewayFixture.apiKey).json["token"]
            // 49 minutes in: 11 minutes left, more than refreshBefore (10m): a plain hit.
            fixture.clock.advance(by: .seconds(49 * 60))
            #expect(try await gateway.get(Self.path, bearer: GatewayFixture.apiKey).json["token"] == first)
            #expect(fixture.probe.calls == 1)
            // 52 minutes in: 8 minutes left: the current token is still served, one refresh starts behind it.
            fixture.clock.advance(by: .seconds(3 * 60))
            #expect(try await gateway.get(Self.path, bearer: GatewayFixture.apiKey).json["token"] == first)
            await gateway.service.waitForBackgroundRefreshes()
            #expect(fixture.probe.calls == 2)
            let refreshed = try await gateway.get(Self.path, bearer: GatewayFixture.apiKey).json
            #expect(refreshed["token"] != first)
            #expect(refreshed["expiresAt"] == .integer(fixture.clock.now + 3600))
        }
    }

    @Test func waitsForAFreshTokenOnceLessThanMinRemainingIsLeft() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let first = try await gateway.get(Self.path, bearer: GatewayFixture.apiKey).json["token"]
            fixture.clock.advance(by: .seconds(56 * 60))  // 4 minutes left: below minRemaining (5m)
            let second = try await gateway.get(Self.path, bearer: GatewayFixture.apiKey).json
            #expect(second["token"] != first)
            #expect(second["expiresIn"] == .integer(3600))
            #expect(fixture.probe.calls == 2)
        }
    }

    /// The wall clock jumps forward past the cached token's `exp` (monotonic time does not move): the token is
    /// never served past its expiry; one fresh mint serves every request after the jump.
    @Test func aWallClockJumpForwardNeverServesATokenPastItsExpiry() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let first = try await gateway.get(Self.path, bearer: GatewayFixture.apiKey).json
            fixture.clock.jumpWall(by: 2 * 3600)
            let answers = try await withThrowingTaskGroup(of: JSONObject.self) { group in
                for _ in 0..<20 { group.addTask { try await gateway.get(Self.path, bearer: GatewayFixture.apiKey).json } }
                return try await group.reduce(into: [JSONObject]()) { $0.append($1) }
            }
            for answer in answers {
                #expect(answer["token"] != first["token"])
                #expect((answer["expiresAt"]?.integerValue ?? 0) > fixture.clock.now + 3000)
            }
            #expect(fixture.probe.calls == 2, "one mint before the jump, one after: no storm")
        }
    }

    /// The wall clock jumps back two hours: the cached token looks younger than it is, keeps being served, and
    /// nothing is minted (no refresh storm); once the clock is right again, refresh-ahead works as before.
    @Test func aWallClockJumpBackwardCausesNoRefreshStorm() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let first = try await gateway.get(Self.path, bearer: GatewayFixture.apiKey).json["token"]
            fixture.clock.jumpWall(by: -2 * 3600)
            for _ in 0..<20 { #expect(try await gateway.get(Self.path, bearer: GatewayFixture.apiKey).json["token"] == first) }
            await gateway.service.waitForBackgroundRefreshes()
            #expect(fixture.probe.calls == 1)
            fixture.clock.jumpWall(by: 2 * 3600 + 53 * 60)  // right again, 53 minutes in: inside the refresh window
            #expect(try await gateway.get(Self.path, bearer: GatewayFixture.apiKey).json["token"] == first)
            await gateway.service.waitForBackgroundRefreshes()
            #expect(fixture.probe.calls == 2)
        }
    }

    @Test func evictsTheLeastRecentlyUsedContextPastMaxEntries() async throws {
        let fixture = try GatewayFixture(cache: "{ maxEntries: 2 }")
        try await fixture.withGateway { gateway in
            for trip in ["a-1", "b-1", "a-1", "c-1"] {
                #expect(try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=\(trip)", bearer: GatewayFixture.apiKey).status == 200)
            }
            #expect(fixture.probe.calls == 3)  // a, b, c; the second a was a hit
            _ = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=a-1", bearer: GatewayFixture.apiKey)
            #expect(fixture.probe.calls == 3)  // a was used more recently than b, so b was evicted
            _ = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=b-1", bearer: GatewayFixture.apiKey)
            #expect(fixture.probe.calls == 4)
        }
    }

    @Test func aTokenThatFailsVerificationIsNeverServedNorCached() async throws {
        let fixture = try GatewayFixture()
        fixture.probe.misbehave(true)
        try await fixture.withGateway { gateway in
            for attempt in 1...2 {
                let response = try await gateway.get(Self.path, bearer: GatewayFixture.apiKey)
                #expect(response.status == 502)
                #expect(response.errorCode == "backend_invalid_token")
                #expect(!response.text.contains("eyJ"))
                #expect(fixture.probe.calls == attempt)
            }
            fixture.probe.misbehave(false)
            #expect(try await gateway.get(Self.path, bearer: GatewayFixture.apiKey).status == 200)
        }
    }
}
