import Foundation
import JOSE
import StaticKeySigner
import Testing
import TokenGateCore
import TokenGateTesting

/// `compatibility: google-samples`: the routes and bodies of Google's sample token servers, answered with the same
/// authentication, authorization, cache and verification as the main route. Each test replays the request a sample
/// app makes and reads the answer the way that app's code does.
@Suite struct GoogleSampleRoutesTests {
    static let apiKey = "samples-backend-key-0123456789"
    static let issuer = "https://login.acme.test/"

    struct Fixture {
        let directory: TemporaryDirectory
        let clock = ManualClock()
        let identityProvider: JWSKey

        init(fleetReaderType: String = "delivery-fleet-reader") throws {
            directory = try TemporaryDirectory()
            identityProvider = try JWSKey.generate(.rs256, keyID: "idp-1")
            try directory.write("idp-jwks.json", try JWKSet(keys: [identityProvider.publicKey()]).publicJSON())
            let account = try ServiceAccountKey.generate(projectID: "acme-rides", clientEmail: "tokens@acme-rides.iam.gserviceaccount.com")
            try directory.write("keys/signer.json", try account.json())
            // The signing key is written above, not generated; every token type signs with it.
            let types = ["consumer", "driver", "delivery-driver", "delivery-consumer", fleetReaderType]
            let keys = types.map { "    \($0): [{ serviceAccountFile: keys/signer.json }]" }.joined(separator: "\n")
            let allow = "{ consumer: any, driver: any, delivery-driver: any, delivery-consumer: any, \(fleetReaderType): whole-fleet }"
            let riderApp = """
                { name: rider-app, type: jwt, jwksFile: idp-jwks.json, issuer: "\(GoogleSampleRoutesTests.issuer)", audience: tokengate, \
                allow: { consumer: { claim: trips } } }
                """
            let acme = ProviderYAML(
                "acme-rides", settings: ["compatibility: google-samples"], backend: .yaml("backend:\n  type: static-key\n  keys:\n" + keys),
                clients: [ProviderYAML.apiKey("sample-backend", TestAPIKey(GoogleSampleRoutesTests.apiKey), allow: allow), riderApp])
            let plain = ProviderYAML(
                "plain-rides", backend: .flow("{ type: static-key, keys: { consumer: [{ serviceAccountFile: keys/signer.json }] } }"),
                clients: [ProviderYAML.apiKey("sample-backend", TestAPIKey("plain-key-0123456789"))])
            try directory.write("config.yaml", ProviderYAML.config(acme, plain))
        }

        func withGateway<Result: Sendable>(_ body: (RunningGateway) async throws -> Result) async throws -> Result {
            defer { directory.remove() }
            return try await RunningGateway.with(
                configuration: "\(directory.path)/config.yaml", registry: BackendRegistry([StaticKeySignerFactory()]),
                clock: clock.gatewayClock, body)
        }

        func sessionToken(trips: [String]) throws -> String {
            let claims: JSONObject = [
                "iss": .string(GoogleSampleRoutesTests.issuer), "sub": "rider-1", "aud": "tokengate", "iat": .integer(clock.now),
                "exp": .integer(clock.now + 3600), "trips": .array(trips.map { .string($0) }),
            ]
            return try JWSSigner(key: identityProvider).sign(claims: claims)
        }
    }

    /// What Google's on-demand sample apps read: `jwt` and the absolute `expirationTimestamp` in milliseconds
    /// (`JSONObject.getString("jwt")`, `getLong("expirationTimestamp")`).
    struct OnDemandSampleAnswer {
        let jwt: String
        let creationMillis: Int64
        let expirationMillis: Int64

        init(_ body: [UInt8]) throws {
            let object = try #require(try JSON.parse(body).objectValue)
            #expect(Set(object.map(\.key)) == ["jwt", "creationTimestamp", "expirationTimestamp"])
            jwt = try #require(object["jwt"]?.stringValue)
            creationMillis = try #require(object["creationTimestamp"]?.integerValue)
            expirationMillis = try #require(object["expirationTimestamp"]?.integerValue)
        }
    }

    /// What the last-mile sample's apps and web pages read: `token` and `expiration_timestamp_ms` (the JavaScript
    /// fetcher turns it into `expiresInSeconds` against now).
    struct LastMileSampleAnswer {
        let token: String
        let creationMillis: Int64
        let expirationMillis: Int64

        init(_ body: [UInt8]) throws {
            let object = try #require(try JSON.parse(body).objectValue)
            #expect(Set(object.map(\.key)) == ["token", "creation_timestamp_ms", "expiration_timestamp_ms"])
            token = try #require(object["token"]?.stringValue)
            creationMillis = try #require(object["creation_timestamp_ms"]?.integerValue)
            expirationMillis = try #require(object["expiration_timestamp_ms"]?.integerValue)
        }
    }

    @Test(arguments: [
        ("consumer/trip-42", #"{"tripid":"trip-42"}"#),
        ("driver/vehicle-7", #"{"vehicleid":"vehicle-7"}"#),
    ])
    func onDemandRoutesAnswerInTheOnDemandSamplesShape(route: String, claim: String) async throws {
        let fixture = try Fixture()
        try await fixture.withGateway { gateway in
            let response = try await gateway.get("/v1/providers/acme-rides/samples/token/\(route)", bearer: Self.apiKey)
            #expect(response.status == 200, "\(response.text)")
            #expect(response.header("Cache-Control") == "no-store")
            let answer = try OnDemandSampleAnswer(response.body)
            let claims = try #require(JWTVerifier.decodeUnverified(answer.jwt).claims)
            #expect(claims["authorization"] == (try JSON.parse(Array(claim.utf8))))
            #expect(answer.creationMillis == fixture.clock.now * 1000)
            #expect(answer.expirationMillis == (try #require(claims["exp"]?.integerValue)) * 1000)
            // The app compares the expiry with now in milliseconds: a full hour left.
            #expect(answer.expirationMillis - fixture.clock.now * 1000 == 3_600_000)
            try await verify(answer.jwt, fixture: fixture, gateway: gateway)
        }
    }

    @Test(arguments: [
        ("delivery_driver/van-3", #"{"deliveryvehicleid":"van-3"}"#, 3600),
        ("delivery_consumer/parcel-9", #"{"trackingid":"parcel-9"}"#, 3600),
        // The last-mile sample's fleet_reader is a delivery fleet reader.
        ("fleet_reader", #"{"taskid":"*","trackingid":"*","deliveryvehicleid":"*"}"#, 600),
    ])
    func lastMileRoutesAnswerInTheLastMileSampleShape(route: String, claim: String, lifetime: Int64) async throws {
        let fixture = try Fixture()
        try await fixture.withGateway { gateway in
            let response = try await gateway.get("/v1/providers/acme-rides/samples/token/\(route)", bearer: Self.apiKey)
            #expect(response.status == 200, "\(response.text)")
            let answer = try LastMileSampleAnswer(response.body)
            let claims = try #require(JWTVerifier.decodeUnverified(answer.token).claims)
            #expect(claims["authorization"] == (try JSON.parse(Array(claim.utf8))))
            #expect(answer.creationMillis == fixture.clock.now * 1000)
            let expiresInSeconds = (answer.expirationMillis - fixture.clock.now * 1000) / 1000
            #expect(expiresInSeconds == lifetime)
            try await verify(answer.token, fixture: fixture, gateway: gateway)
        }
    }

    @Test func fleetReaderIsTheUnifiedOneWhenTheProviderIssuesNoDeliveryFleetReader() async throws {
        let fixture = try Fixture(fleetReaderType: "fleet-reader")
        try await fixture.withGateway { gateway in
            let response = try await gateway.get("/v1/providers/acme-rides/samples/token/fleet_reader", bearer: Self.apiKey)
            #expect(response.status == 200, "\(response.text)")
            let claims = try #require(JWTVerifier.decodeUnverified(try LastMileSampleAnswer(response.body).token).claims)
            #expect(claims["authorization"]?.objectValue?.count == 5)
        }
    }

    @Test func theSampleRouteSharesTheMainRoutesCacheAndChecks() async throws {
        let fixture = try Fixture()
        try await fixture.withGateway { gateway in
            let sample = try OnDemandSampleAnswer(
                try await gateway.get("/v1/providers/acme-rides/samples/token/consumer/trip-42", bearer: Self.apiKey).body)
            let main = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-42", bearer: Self.apiKey)
            // One mint, one cache entry: the same token by both routes.
            #expect(main.json["token"]?.stringValue == sample.jwt)

            let paths = "/v1/providers/acme-rides/samples/token/"
            // No credential: the samples' servers had none; TokenGate never vends anonymously.
            let anonymous = try await gateway.get(paths + "consumer/trip-42")
            #expect(anonymous.status == 401)
            #expect(anonymous.errorCode == "unauthenticated")
            // A rider gets only the trips their session token lists.
            let session = try fixture.sessionToken(trips: ["trip-42"])
            #expect(try await gateway.get(paths + "consumer/trip-42", bearer: session).status == 200)
            let otherTrip = try await gateway.get(paths + "consumer/trip-43", bearer: session)
            #expect(otherTrip.status == 403)
            #expect(otherTrip.errorCode == "forbidden")
            #expect(try await gateway.get(paths + "driver/vehicle-7", bearer: session).status == 403)
            // IDs are checked as on the main route.
            let wildcard = try await gateway.get(paths + "consumer/*", bearer: Self.apiKey)
            #expect(wildcard.status == 400)
            #expect(try await gateway.get(paths + "teleporter/x", bearer: Self.apiKey).errorCode == "unknown_token_type")
            #expect(try await gateway.get(paths + "consumer", bearer: Self.apiKey).status == 400)
            #expect(try await gateway.get(paths + "fleet_reader/x", bearer: Self.apiKey).status == 400)
        }
    }

    @Test func aProviderWithoutCompatibilityDoesNotAnswerTheSampleRoutes() async throws {
        let fixture = try Fixture()
        try await fixture.withGateway { gateway in
            let response = try await gateway.get("/v1/providers/plain-rides/samples/token/consumer/trip-42", bearer: "plain-key-0123456789")
            #expect(response.status == 404)
            #expect(response.errorCode == "not_found")
            let unknown = try await gateway.get("/v1/providers/nobody-here/samples/token/consumer/trip-42", bearer: Self.apiKey)
            #expect(unknown.errorCode == "unknown_provider")
            // Counted under the token type the sample route names.
            _ = try await gateway.get("/v1/providers/plain-rides/samples/token/delivery_driver/van-3", bearer: "plain-key-0123456789")
            let denials = try await gateway.metrics().split(separator: "\n").filter { $0.hasPrefix("tokengate_denials_total{") }
            #expect(
                denials.contains {
                    $0.contains(#"provider="plain-rides""#) && $0.contains(#"token_type="delivery-driver""#) && $0.contains(#"code="not_found""#)
                },
                "\(denials)")
            // The main route still serves it.
            #expect(try await gateway.get("/v1/providers/plain-rides/tokens/consumer?tripId=trip-42", bearer: "plain-key-0123456789").status == 200)
        }
    }

    /// The token verifies with the provider's published JWKS, bound to the signing service account.
    private func verify(_ token: String, fixture: Fixture, gateway: RunningGateway) async throws {
        let account = try ServiceAccountKey(json: Array(try Data(contentsOf: URL(fileURLWithPath: "\(fixture.directory.path)/keys/signer.json"))))
        let published = try JWKSet(json: try await gateway.get("/v1/providers/acme-rides/jwks.json").body)
        let keys = VerificationKeys(keySet: published, issuers: [account.privateKeyID: account.clientEmail])
        let scope = try TokenScope.context(ofUnverified: token)
        _ = try FleetEngineVerifier(keys: keys, audience: FleetEngineClaims.defaultAudience).verify(token, for: scope, now: fixture.clock.now)
    }
}
