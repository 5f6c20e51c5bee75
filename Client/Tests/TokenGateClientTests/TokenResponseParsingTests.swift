import Foundation
import Testing
import TokenGateClient

@Suite struct TokenResponseParsingTests {
    static let now = ManualClock().now.timeIntervalSince1970

    private func parse(
        _ body: Data, format: TokenResponseFormat = .tokenGate, clock: ManualClock = ManualClock()
    ) async throws -> FleetEngineToken {
        let transport = TestTransport { _, _ in HTTPTransportResponse(status: 200, body: body) }
        let provider = Fixtures.provider(transport, clock: clock, format: format)
        return try await provider.fleetEngineToken(for: .trip("trip-42"))
    }

    struct LegacyCase: Sendable, CustomTestStringConvertible {
        let name: String
        let format: TokenResponseFormat
        let body: [String: Double]
        let tokenKey: String
        var testDescription: String { name }
    }

    static let legacyShapes: [LegacyCase] = [
        LegacyCase(
            name: "on-demand sample, epoch ms", format: .onDemandSample,
            body: ["expirationTimestamp": (now + 3600) * 1000], tokenKey: "jwt"),
        LegacyCase(
            name: "last-mile sample, epoch ms", format: .lastMileSample,
            body: ["expiration_timestamp_ms": (now + 3600) * 1000], tokenKey: "token"),
        LegacyCase(
            name: "JS journey sharing, seconds from now", format: .journeySharing,
            body: ["expiresInSeconds": 3600], tokenKey: "token"),
        LegacyCase(
            name: "iOS Swift sample, epoch s", format: .iOSSample(tokenKey: "TRIP_TOKEN_KEY", expiry: .epochSeconds),
            body: ["TOKEN_EXPIRATION": now + 3600], tokenKey: "TRIP_TOKEN_KEY"),
        LegacyCase(
            name: "iOS Objective-C sample, seconds from now",
            format: .iOSSample(tokenKey: "VEHICLE_TOKEN_KEY", expiry: .secondsFromNow),
            body: ["TOKEN_EXPIRATION": 3600], tokenKey: "VEHICLE_TOKEN_KEY"),
    ]

    @Test(arguments: legacyShapes)
    func parsesLegacyShapes(shape: LegacyCase) async throws {
        var object: [String: Any] = shape.body
        object[shape.tokenKey] = "opaque-token"
        let token = try await parse(Fixtures.json(object), format: shape.format)
        #expect(token.token == "opaque-token")
        #expect(token.expiresAt.timeIntervalSince1970 == Self.now + 3600)
        #expect(token.refreshAfter.timeIntervalSince1970 == Self.now + 3000)
    }

    @Test func tokenGateShapePrefersExpiresInOverASkewedExpiresAt() async throws {
        // The gateway's clock is 20 minutes behind the device's: expiresAt alone would shorten the token's life.
        let serverNow = Self.now - 1200
        let body = Fixtures.json([
            "token": "t", "issuedAt": serverNow, "expiresAt": serverNow + 3600, "expiresIn": 3600,
            "refreshAfter": serverNow + 3300,
        ])
        let token = try await parse(body)
        #expect(token.expiresAt.timeIntervalSince1970 == Self.now + 3600)
        #expect(token.refreshAfter.timeIntervalSince1970 == Self.now + 3300)  // the 5-minute lead is kept
    }

    @Test func tokenGateShapeFallsBackToExpiresAtAndDefaultLead() async throws {
        let token = try await parse(Fixtures.json(["token": "t", "expiresAt": Self.now + 1800]))
        #expect(token.expiresAt.timeIntervalSince1970 == Self.now + 1800)
        #expect(token.refreshAfter.timeIntervalSince1970 == Self.now + 1200)
    }

    @Test func aTokenAlreadyDueOnReceiptIsDueAtOnce() async throws {
        let token = try await parse(Fixtures.json(["token": "t", "expiresIn": 300]))
        #expect(token.refreshAfter.timeIntervalSince1970 == Self.now)
    }

    @Test(arguments: [
        ("3600 sent, read as epoch seconds", TokenResponseFormat.Expiry.epochSeconds, 3600.0),
        ("epoch seconds sent, read as a lifetime", .secondsFromNow, now + 3600),
        ("epoch ms sent, read as epoch seconds", .epochSeconds, (now + 3600) * 1000),
        ("lifetime sent, read as epoch ms", .epochMilliseconds, 3600),
    ])
    func legacyExpiryContradictingTheTokenExpFallsBackToExp(
        _ mistake: String, meaning: TokenResponseFormat.Expiry, sent: Double
    ) async throws {
        let jwt = Fixtures.jwt(exp: Self.now + 3600)
        let body = Fixtures.json(["TRIP_TOKEN_KEY": jwt, "TOKEN_EXPIRATION": sent])
        let token = try await parse(body, format: .iOSSample(tokenKey: "TRIP_TOKEN_KEY", expiry: meaning))
        #expect(token.expiresAt.timeIntervalSince1970 == Self.now + 3600, "\(mistake)")
    }

    @Test func legacyExpiryAgreeingWithExpIsKept() async throws {
        let jwt = Fixtures.jwt(exp: Self.now + 3600)
        let body = Fixtures.json(["token": jwt, "expiresInSeconds": 3500])
        let token = try await parse(body, format: .journeySharing)
        #expect(token.expiresAt.timeIntervalSince1970 == Self.now + 3500)
    }

    @Test func legacyBodyWithoutExpiryUsesTheTokenExp() async throws {
        let jwt = Fixtures.jwt(exp: Self.now + 1800)
        let token = try await parse(Fixtures.json(["jwt": jwt]), format: .onDemandSample)
        #expect(token.expiresAt.timeIntervalSince1970 == Self.now + 1800)
    }

    @Test(arguments: [
        "", "not json", "[]", "null", "{}", #"{"token": 42, "expiresIn": 3600}"#, #"{"token": "", "expiresIn": 3600}"#,
        #"{"token": "t"}"#, #"{"token": "t", "expiresIn": "soon"}"#, #"{"token": "t", "expiresIn": true}"#,
        #"{"token": "t", "expiresIn": -5}"#, #"{"token": "t", "expiresIn": {"s": 5}}"#,
        #"{"token": ["t"], "expiresIn": 3600}"#, #"{"token": "t", "expiresAt": 1000}"#,
    ])
    func malformedBodiesAreInvalidResponsesAndNotRetried(body: String) async throws {
        let clock = ManualClock()
        let transport = TestTransport { _, _ in HTTPTransportResponse(status: 200, body: Data(body.utf8)) }
        let provider = Fixtures.provider(transport, clock: clock)
        let error = await #expect(throws: TokenGateClientError.self) { try await provider.token(for: .trip("t")) }
        #expect(error?.code == .invalidResponse)
        #expect(transport.count == 1)
        #expect(clock.sleeps.isEmpty)
    }

    @Test(arguments: [
        #"{"jwt": "t", "expirationTimestamp": 1000}"#,  // already past, and no exp to fall back on
        #"{"jwt": "t.e30.s", "expirationTimestamp": "soon"}"#,  // a JWT without exp
        #"{"jwt": "t.!!!.s"}"#,
    ])
    func legacyBodyWithoutUsableExpiryIsInvalid(body: String) async throws {
        await #expect(throws: TokenGateClientError.self) {
            _ = try await parse(Data(body.utf8), format: .onDemandSample)
        }
    }
}
