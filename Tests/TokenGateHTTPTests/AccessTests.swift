import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

@Suite struct AccessTests {
    static let trip = "/v1/providers/acme-rides/tokens/consumer?tripId=trip-42"

    @Test(arguments: [
        (nil as String?, "unauthenticated", 401),
        ("not-the-key", "unauthenticated", 401),
        (GatewayFixture.revokedKey, "unauthenticated", 401),
        (GatewayFixture.otherTenantKey, "forbidden", 403),
    ])
    func refusesMissingWrongRevokedAndOtherTenantCredentials(key: String?, code: String, status: Int) async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let response = try await gateway.get(Self.trip, bearer: key)
            #expect(response.status == status)
            #expect(response.errorCode == code)
            if status == 401 { #expect(response.header("WWW-Authenticate")?.hasPrefix("Bearer") == true) }
            #expect(fixture.probe.calls == 0)
        }
    }

    /// Callers are told a fixed sentence per code (or, for a refused ID, per parameter and rule): never a client name,
    /// a revocation, or why a credential failed.
    @Test func noDenialBodyNamesAClientOrAnInternalReason() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let forged = try fixture.sessionToken(claims: ["trips": .string("trip-42")], issuer: "https://evil.test/")
            let stranger = try fixture.sessionToken(claims: ["trips": .string("trip-7")])
            let cases: [(String, String?)] = [
                (Self.trip, GatewayFixture.revokedKey), (Self.trip, "not-the-key"), (Self.trip, forged), (Self.trip, stranger),
                (Self.trip, GatewayFixture.otherTenantKey), ("/v1/providers/acme-rides/tokens/driver?vehicleId=v-1", stranger),
                ("/v1/providers/acme-rides/tokens/consumer?tripId=*", GatewayFixture.apiKey),
                ("/v1/providers/acme-rides/tokens/consumer?tripId=dispatch%2Fretired", GatewayFixture.apiKey),
                ("/v1/providers/nobody-here/tokens/consumer?tripId=t", GatewayFixture.apiKey),
            ]
            for (path, credential) in cases {
                let response = try await gateway.get(path, bearer: credential)
                #expect((400..<500).contains(response.status))
                for secret in [
                    "dispatch", "retired", "rider-app", "other-dispatch", "revoked", "acme-rides", "other-fleet", "evil", "trip-7", "bad_signature",
                    "wrong_issuer", "claim",
                ] {
                    #expect(!response.text.contains(secret), "\(path): \(response.text)")
                }
                let message = try #require(response.json["error"]?.objectValue?["message"]?.stringValue)
                let code = try #require(response.errorCode)
                let fixed = TokenGateError.Code.allCases.filter { $0.rawValue == code }.map(\.publicMessage)
                let refusals = code == "invalid_request" ? ContextID.Refusal.allCases.map(\.description) : []
                #expect((fixed + refusals).contains(message), "\(path): \(message)")
            }
        }
    }

    /// A session token signed by the identity provider's own key, but in another issuer's name, is nobody's.
    @Test func aSessionTokenWithTheRightKeyAndAForeignIssuerIsRefused() async throws {
        let fixture = try GatewayFixture()
        let logs = LogRecorder()
        try await fixture.withGateway(logs: logs) { gateway in
            let forged = try fixture.sessionToken(claims: ["trips": .string("trip-42")], issuer: "https://evil.test/")
            let response = try await gateway.get(Self.trip, bearer: forged)
            #expect(response.status == 401)
            #expect(response.errorCode == "unauthenticated")
            #expect(fixture.probe.calls == 0)
            #expect(!logs.all.contains { $0.text.contains(forged) })
        }
    }

    @Test func aRiderGetsTokensOnlyForTripsInTheSessionClaim() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let session = try fixture.sessionToken(claims: ["trips": .array([.string("trip-42"), .string("trip-43")])])
            #expect(try await gateway.get(Self.trip, bearer: session).status == 200)
            let other = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-99", bearer: session)
            #expect(other.status == 403 && other.errorCode == "forbidden")
            let driver = try await gateway.get("/v1/providers/acme-rides/tokens/driver?vehicleId=trip-42", bearer: session)
            #expect(driver.status == 403)
            let stranger = try fixture.sessionToken(claims: ["trips": .string("trip-7")])
            #expect(try await gateway.get(Self.trip, bearer: stranger).status == 403)
            let expired = try fixture.sessionToken(claims: ["trips": .string("trip-42")], lifetime: -120)
            #expect(try await gateway.get(Self.trip, bearer: expired).status == 401)
        }
    }

    @Test func rateLimitsAnswer429WithRetryAfter() async throws {
        let fixture = try GatewayFixture(rateLimits: "{ context: { rate: 60/min, burst: 2 } }")
        try await fixture.withGateway { gateway in
            #expect(try await gateway.get(Self.trip, bearer: GatewayFixture.apiKey).status == 200)
            #expect(try await gateway.get(Self.trip, bearer: GatewayFixture.apiKey).status == 200)
            let limited = try await gateway.get(Self.trip, bearer: GatewayFixture.apiKey)
            #expect(limited.status == 429 && limited.errorCode == "rate_limited")
            #expect(limited.header("Retry-After") == "1")
            // Another trip has its own bucket; after a second the first one has a token again.
            #expect(try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-43", bearer: GatewayFixture.apiKey).status == 200)
            fixture.clock.advance(by: .seconds(1))
            #expect(try await gateway.get(Self.trip, bearer: GatewayFixture.apiKey).status == 200)
        }
    }

    @Test(arguments: [
        ("/v1/providers/acme-rides/tokens/consumer?tripId=*", 400, "invalid_request"),
        ("/v1/providers/acme-rides/tokens/consumer?tripId=", 400, "invalid_request"),
        ("/v1/providers/acme-rides/tokens/consumer?tripId=a%2Fb", 400, "invalid_request"),
        ("/v1/providers/acme-rides/tokens/consumer?vehicleId=v1", 400, "invalid_request"),
        ("/v1/providers/acme-rides/tokens/consumer?tripId=a&tripId=b", 400, "invalid_request"),
        ("/v1/providers/acme-rides/tokens/consumer?tripId=a&admin=1", 400, "invalid_request"),
        ("/v1/providers/acme-rides/tokens/consumer?tripId=\(String(repeating: "x", count: 200))", 400, "invalid_request"),
        ("/v1/providers/acme-rides/tokens/consumer?tripId=\(String(repeating: "x", count: 65))", 400, "invalid_request"),
        ("/v1/providers/acme-rides/tokens/server", 404, "unknown_token_type"),
        ("/v1/providers/acme-rides/tokens/taxi?tripId=a", 404, "unknown_token_type"),
        ("/v1/providers/nobody-here/tokens/consumer?tripId=a", 404, "unknown_provider"),
    ])
    func refusesHostileRequestsBeforeAnyBackendWork(path: String, status: Int, code: String) async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let response = try await gateway.get(path, bearer: GatewayFixture.apiKey)
            #expect(response.status == status, "\(response.text)")
            #expect(response.errorCode == code)
            #expect(fixture.probe.calls == 0)
        }
    }

    @Test func refusesOversizedHeadersAndCredentials() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let longCredential = try await gateway.get(Self.trip, bearer: String(repeating: "k", count: 9000))
            #expect(longCredential.status == 400)
            // A header past the decoder's limit never reaches a handler.
            let huge = try? await gateway.get(
                Self.trip, bearer: GatewayFixture.apiKey, headers: [("X-Padding", String(repeating: "p", count: 40_000))])
            #expect(huge == nil || huge!.status >= 400)
            #expect(fixture.probe.calls == 0)
        }
    }
}
