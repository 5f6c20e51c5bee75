import Foundation
import JOSE
import Logging
import StaticKeySigner
import Testing
import TokenGateCore
import TokenGateTesting

/// A signing key Google no longer accepts is found before Fleet Engine rejects its tokens: the gateway asks a
/// stand-in of Google's per-account key lists (at start, on reload) whether each signing key is still listed, and
/// watches each key's `expires:` date; a problem makes the provider degraded in `/readyz`, with its gauge.
@Suite(.timeLimit(.minutes(5))) struct KeyHealthTests {
    static let account = "tokens@acme-rides.iam.gserviceaccount.com"
    static let apiKey = "acme-dispatch-key-0123456789"
    static let signingKey = Result { try ServiceAccountKey.generate(projectID: "acme-rides", clientEmail: account) }

    struct Fixture {
        let directory: TemporaryDirectory
        let clock = ManualClock()

        /// `keyHealth` is the provider's section; `expires` the signing key's `expires:` value, if any.
        init(keyHealth: String, expires: String? = nil) throws {
            directory = try TemporaryDirectory()
            try directory.write("keys/signer.json", try KeyHealthTests.signingKey.get().json())
            // The key file is written above, not generated: the test controls the key and its `expires`.
            let expiresEntry = expires.map { ", expires: \($0)" } ?? ""
            try directory.write(
                "config.yaml",
                ProviderYAML.config(
                    ProviderYAML(
                        "acme-rides", settings: ["keyHealth: \(keyHealth)"],
                        backend: .flow("{ type: static-key, keys: { consumer: [{ serviceAccountFile: keys/signer.json\(expiresEntry) }] } }"),
                        clients: [ProviderYAML.apiKey("dispatch", TestAPIKey(KeyHealthTests.apiKey))])))
        }

        func withGateway<Result: Sendable>(_ body: (RunningGateway) async throws -> Result) async throws -> Result {
            defer { directory.remove() }
            return try await RunningGateway.with(
                configuration: "\(directory.path)/config.yaml", registry: BackendRegistry([StaticKeySignerFactory()]), clock: clock.gatewayClock,
                logger: Logger(label: "tokengate-test", factory: { _ in SwiftLogNoOpLogHandler() }), body)
        }
    }

    /// The provider's state and reasons on the admin listener's `/readyz`.
    static func readiness(_ gateway: RunningGateway) async throws -> (state: String?, reasons: [String]) {
        let answer = try await RunningGateway.Endpoint(baseURL: gateway.adminURL).get("/readyz")
        let provider = answer.json["providers"]?.objectValue?["acme-rides"]?.objectValue
        return (provider?["state"]?.stringValue, provider?["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    }

    @Test func aKeyGoogleStopsListingDegradesTheProviderUntilItIsListedAgain() async throws {
        try await GoogleAccountKeysServer.with { google, url in
            let signing = try Self.signingKey.get()
            let other = try JWSKey.generate(.rs256, keyID: "another-live-key")
            google.publish([other, signing.key], for: Self.account)
            let fixture = try Fixture(keyHealth: "{ checkPublished: true, publishedKeysUrl: \"\(url)/service_accounts/v1/jwk/{serviceAccount}\" }")
            try await fixture.withGateway { gateway in
                // Asked at start: listed, so ready.
                #expect(try await eventually { google.requests.contains(Self.account) })
                #expect(try await eventually { try await Self.readiness(gateway).state == "ready" })
                var scrape = MetricsTests.Scrape(try await gateway.metrics())
                #expect(scrape["tokengate_signing_key_unpublished", ["provider": "acme-rides", "kid": signing.privateKeyID]] == 0)

                // The key is deleted in Google Cloud: the next check (a reload here; hourly otherwise) finds it.
                google.publish([other], for: Self.account)
                _ = try await gateway.reloader.reload(trigger: "test")
                let degraded = try await Self.readiness(gateway)
                #expect(degraded.state == "degraded")
                #expect(degraded.reasons.contains { $0.hasPrefix("key_unpublished: key \(signing.privateKeyID) of \(Self.account)") }, "\(degraded)")
                scrape = MetricsTests.Scrape(try await gateway.metrics())
                #expect(scrape["tokengate_signing_key_unpublished", ["provider": "acme-rides", "kid": signing.privateKeyID]] == 1)
                // Degraded, not down: the gateway still serves (Fleet Engine is the one that refuses).
                #expect(try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=t-1", bearer: Self.apiKey).status == 200)

                // Listed again (the key re-enabled): ready again at the next check.
                google.publish([other, signing.key], for: Self.account)
                _ = try await gateway.reloader.reload(trigger: "test")
                #expect(try await Self.readiness(gateway).state == "ready")
                // A list that cannot be fetched says nothing about the key: it keeps its last known state.
                google.withdraw(Self.account)
                _ = try await gateway.reloader.reload(trigger: "test")
                #expect(try await Self.readiness(gateway).state == "ready")
                #expect(google.requests.count == 4)
            }
        }
    }

    /// Between reloads Google is asked again every `interval` (an hour by default; 30 s, the shortest, here): a key
    /// deleted after the start is found by the next check with no reload, and found listed again by the one after.
    @Test func googleIsAskedAgainEveryIntervalWithoutAReload() async throws {
        try await GoogleAccountKeysServer.with { google, url in
            let signing = try Self.signingKey.get()
            let other = try JWSKey.generate(.rs256, keyID: "another-live-key")
            google.publish([other, signing.key], for: Self.account)
            let fixture = try Fixture(
                keyHealth: "{ checkPublished: true, interval: 30s, publishedKeysUrl: \"\(url)/service_accounts/v1/jwk/{serviceAccount}\" }")
            try await fixture.withGateway { (gateway: RunningGateway) async throws -> Void in
                #expect(try await eventually { try await Self.readiness(gateway).state == "ready" })
                let askedAtStart = google.requests.count
                google.publish([other], for: Self.account)
                // The next check is 30 s after the first; a minute bounds it on a loaded machine.
                #expect(try await eventually(within: .seconds(90)) { try await Self.readiness(gateway).state == "degraded" })
                #expect(google.requests.count > askedAtStart)
                google.publish([other, signing.key], for: Self.account)
                #expect(try await eventually(within: .seconds(90)) { try await Self.readiness(gateway).state == "ready" })
            }
        }
    }

    @Test func aKeyNearItsExpiryDateDegradesTheProviderWithoutAskingGoogle() async throws {
        // The manual clock reads 2027-01-15T08:00:00Z: a key expiring in 20 days is inside the 30-day warning.
        let fixture = try Fixture(keyHealth: "{}", expires: "2027-02-04")
        try await fixture.withGateway { gateway in
            let (state, reasons) = try await Self.readiness(gateway)
            #expect(state == "degraded")
            let kid = try Self.signingKey.get().privateKeyID
            #expect(reasons == ["key_expiring: key \(kid) of \(Self.account) expires at 2027-02-04T00:00:00Z (in 19 days); rotate it before then"])
            let scrape = MetricsTests.Scrape(try await gateway.metrics())
            #expect(scrape["tokengate_signing_key_expiry_timestamp_seconds", ["provider": "acme-rides", "kid": kid]] == 1_801_699_200)
            #expect(scrape["tokengate_signing_key_unpublished", ["provider": "acme-rides", "kid": kid]] == nil)
            fixture.clock.advance(by: .seconds(20 * 86_400))
            #expect(try await Self.readiness(gateway).reasons.first?.hasPrefix("key_expired: key \(kid)") == true)
        }
    }
}
