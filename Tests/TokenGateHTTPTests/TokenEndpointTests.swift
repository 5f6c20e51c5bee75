import Foundation
import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

@Suite struct TokenEndpointTests {
    /// Verifies a served token with the keys the gateway publishes at jwks.json, as Fleet Engine would, each key
    /// bound to the service account of the key file it came from.
    static func verify(_ token: String, for context: TokenContext, gateway: RunningGateway, fixture: GatewayFixture, now: Int64)
        async throws -> VerifiedJWT
    {
        let jwks = try await gateway.get("/v1/providers/acme-rides/jwks.json")
        #expect(jwks.status == 200)
        var issuers: [String: String] = [:]
        for file in ["consumer", "driver", "delivery"] {
            let account = try ServiceAccountKey(
                json: Array(try Data(contentsOf: URL(fileURLWithPath: "\(fixture.directory.path)/keys/\(file).json"))))
            issuers[account.privateKeyID] = account.clientEmail
        }
        let keys = VerificationKeys(keySet: try JWKSet(json: jwks.body), issuers: issuers)
        return try FleetEngineVerifier(keys: keys, audience: FleetEngineClaims.defaultAudience).verify(token, for: context, now: now)
    }

    @Test(arguments: [
        ("consumer", "tripId", "trip-42", "tripid"),
        ("driver", "vehicleId", "vehicle-7", "vehicleid"),
        ("delivery-driver", "deliveryVehicleId", "van-3", "deliveryvehicleid"),
        ("delivery-consumer", "trackingId", "parcel-9", "trackingid"),
        ("delivery-consumer", "taskId", "task-1", "taskid"),
    ])
    func servesEachTokenTypeVerifiedAndScoped(type: String, parameter: String, id: String, claim: String) async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let response = try await gateway.get("/v1/providers/acme-rides/tokens/\(type)?\(parameter)=\(id)", bearer: GatewayFixture.apiKey)
            #expect(response.status == 200, "\(response.text)")
            #expect(response.header("Cache-Control") == "no-store")
            let body = response.json
            #expect(body["tokenType"] == .string(type))
            #expect(body["providerId"] == .string("acme-rides"))
            #expect(body["context"] == .object(JSONObject([parameter: .string(id)])))
            #expect(body["issuedAt"] == .integer(fixture.clock.now))
            #expect(body["expiresAt"] == .integer(fixture.clock.now + 3600))
            #expect(body["expiresIn"] == .integer(3600))
            #expect(body["refreshAfter"] == .integer(fixture.clock.now + 3000))
            let token = try #require(body["token"]?.stringValue)
            let context = try TokenScope.context(ofUnverified: token)
            let verified = try await Self.verify(token, for: context, gateway: gateway, fixture: fixture, now: fixture.clock.now)
            #expect(verified.claims["authorization"] == .object(JSONObject([claim: .string(id)])))
        }
    }

    @Test func theOpenSSLCommandAcceptsTheSignature() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let response = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-1", bearer: GatewayFixture.apiKey)
            let token = try #require(response.json["token"]?.stringValue)
            let parts = token.split(separator: ".").map(String.init)
            let kid = try #require(JWTVerifier.decodeUnverified(token).header?["kid"]?.stringValue)
            let jwks = try JWKSet(json: try await gateway.get("/v1/providers/acme-rides/jwks.json").body)
            let key = try #require(jwks.key(withID: kid))
            let publicKey = try fixture.directory.write("pub.pem", try key.publicKeyPEM())
            let signature = try fixture.directory.write("sig.bin", try #require(Base64URL.decode(parts[2])))
            let input = try fixture.directory.write("input.txt", "\(parts[0]).\(parts[1])")
            let (status, output) = try await ChildProcess.run("openssl", ["dgst", "-sha256", "-verify", publicKey, "-signature", signature, input])
            #expect(status == 0 && output.contains("Verified OK"), "\(output)")
        }
    }

    @Test(arguments: [
        ("{ tokenKey: jwt, expiryKey: expirationTimestamp, expiryFormat: epoch-milliseconds }", "jwt", "expirationTimestamp", Int64(1000), Int64(0)),
        (
            "{ tokenKey: TRIP_TOKEN_KEY, expiryKey: TOKEN_EXPIRATION, expiryFormat: seconds-from-now }", "TRIP_TOKEN_KEY", "TOKEN_EXPIRATION",
            Int64(0), Int64(3600)
        ),
        (
            "{ tokenKey: token, expiryKey: expiration_timestamp_ms, expiryFormat: epoch-milliseconds }", "token", "expiration_timestamp_ms",
            Int64(1000), Int64(0)
        ),
        (
            "{ tokenKey: TRIP_TOKEN_KEY, expiryKey: TOKEN_EXPIRATION, expiryFormat: epoch-seconds }", "TRIP_TOKEN_KEY", "TOKEN_EXPIRATION", Int64(1),
            Int64(0)
        ),
    ])
    func speaksTheResponseShapeExistingAppsParse(mapping: String, tokenKey: String, expiryKey: String, absoluteFactor: Int64, relative: Int64)
        async throws
    {
        let fixture = try GatewayFixture(response: mapping)
        try await fixture.withGateway { gateway in
            let response = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=t-1", bearer: GatewayFixture.apiKey)
            #expect(response.status == 200)
            let body = response.json
            #expect(body[tokenKey]?.stringValue?.split(separator: ".").count == 3)
            let expected = absoluteFactor > 0 ? (fixture.clock.now + 3600) * absoluteFactor : relative
            #expect(body[expiryKey] == .integer(expected))
            #expect(body.keys.first == tokenKey)
        }
    }

    @Test func publishesKeysAndHealth() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let jwks = try await gateway.get("/v1/providers/acme-rides/jwks.json")
            let set = try JWKSet(json: jwks.body)
            #expect(set.keys.count == 3)
            #expect(set.keys.allSatisfy { !$0.isPrivate && $0.algorithm == .rs256 })
            #expect(!jwks.text.contains("\"d\""))
            #expect(try await gateway.get("/healthz").status == 200)
            #expect(try await gateway.get("/readyz").status == 200)
            let unknown = try await gateway.get("/v1/providers/nobody-here/jwks.json")
            #expect(unknown.status == 404 && unknown.errorCode == "unknown_provider")
        }
    }
}
