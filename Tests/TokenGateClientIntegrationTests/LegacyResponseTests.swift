import Foundation
import Testing
import TokenGateClient
import TokenGateTesting

/// A provider configured with a legacy `response:` mapping, read by the client's matching format.
@Suite(.timeLimit(.minutes(5))) struct LegacyResponseTests {
    struct Shape: Sendable, CustomTestStringConvertible {
        let mapping: String
        let format: TokenResponseFormat
        var testDescription: String { format.description }
    }

    static let shapes = [
        Shape(
            mapping: "{ tokenKey: jwt, expiryKey: expirationTimestamp, expiryFormat: epoch-milliseconds }",
            format: .onDemandSample),
        Shape(
            mapping: "{ tokenKey: TRIP_TOKEN_KEY, expiryKey: TOKEN_EXPIRATION, expiryFormat: seconds-from-now }",
            format: .iOSSample(tokenKey: "TRIP_TOKEN_KEY", expiry: .secondsFromNow)),
        Shape(
            mapping: "{ tokenKey: TRIP_TOKEN_KEY, expiryKey: TOKEN_EXPIRATION, expiryFormat: epoch-seconds }",
            format: .iOSSample(tokenKey: "TRIP_TOKEN_KEY", expiry: .epochSeconds)),
        Shape(
            mapping: "{ tokenKey: token, expiryKey: expiresInSeconds, expiryFormat: seconds-from-now }",
            format: .journeySharing),
    ]

    @Test(arguments: shapes)
    func readsTheTokenAndExpiryOfALegacyShape(_ shape: Shape) async throws {
        let fixture = try ClientGatewayFixture(response: shape.mapping)
        try await fixture.withGateway { gateway in
            let client = try fixture.client(of: gateway, format: shape.format)
            let token = try await client.provider.fleetEngineToken(for: .trip("trip-42"))
            #expect(ClientGatewayFixture.tripClaim(of: token.token) == "trip-42")
            #expect(token.expiresAt == fixture.clock.date(plus: 3600))
            #expect(token.refreshAfter == fixture.clock.date(plus: 3000))
            #expect(try await client.provider.token(for: .trip("trip-42")) == token.token)
            #expect(client.transport.requestCount == 1)
        }
    }

    @Test func aMisreadExpiryMeaningFallsBackToTheTokensExpClaim() async throws {
        // The server sends a lifetime (3600); the app reads it as epoch seconds (1970): the exp claim wins.
        let fixture = try ClientGatewayFixture(
            response: "{ tokenKey: TRIP_TOKEN_KEY, expiryKey: TOKEN_EXPIRATION, expiryFormat: seconds-from-now }")
        try await fixture.withGateway { gateway in
            let client = try fixture.client(
                of: gateway, format: .iOSSample(tokenKey: "TRIP_TOKEN_KEY", expiry: .epochSeconds))
            let token = try await client.provider.fleetEngineToken(for: .trip("trip-42"))
            #expect(token.expiresAt == fixture.clock.date(plus: 3600))
        }
    }
}
