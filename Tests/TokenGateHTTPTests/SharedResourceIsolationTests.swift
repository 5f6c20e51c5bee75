import Foundation
import JOSE
import StaticKeySigner
import Synchronization
import Testing
import TokenGateCore
import TokenGateTesting

/// The shared resources the isolation table of docs/security.md holds by design, each with a tenant misbehaving
/// beside another: a key set that never answers, an authorizer that never answers, and requests that name anything
/// they like, none of which reaches another tenant.
@Suite(.timeLimit(.minutes(5))) struct SharedResourceIsolationTests {
    static let apiKey = "beta-dispatch-key-0123456789"
    static let issuer = "https://login.acme.test/"

    /// A JWKS endpoint per URL: `hung` never answers (until the fetch is cancelled), any other URL serves `body`.
    final class RoutedJWKSFetcher: JWKSFetcher {
        let hung: String
        let body: [UInt8]
        let asked = Mutex<[String]>([])

        init(hung: String, body: [UInt8]) {
            self.hung = hung
            self.body = body
        }

        func fetchJWKS(from url: String) async throws -> [UInt8] {
            asked.withLock { $0.append(url) }
            guard url == hung else { return body }
            while true { try await Task.sleep(for: .seconds(60)) }
        }
    }

    /// Two tenants whose riders' session tokens are verified with keys from URLs of their own: acme-rides' URL never
    /// answers, beta-cabs' does. beta-cabs' key set is fetched, and its riders served, while acme-rides' fetch hangs:
    /// one refresher per URL, each fetch bounded by its own deadline.
    @Test func aKeySetThatNeverAnswersLeavesAnotherTenantsKeySet() async throws {
        let identity = try JWSKey.generate(.es256, keyID: "idp-1")
        let fetcher = RoutedJWKSFetcher(hung: "https://login.acme.test/jwks.json", body: try JWKSet(keys: [identity.publicKey()]).publicJSON())
        let clock = ManualClock()
        try await TemporaryDirectory.with { directory in
            let path = try directory.write(
                "config.yaml",
                """
                providers:
                  acme-rides:
                    backend: { type: static-key, keys: { consumer: [{ serviceAccountFile: keys/acme.json, generateIfMissing: true }] } }
                    clients:
                      - { name: rider-app, type: jwt, jwksUrl: "https://login.acme.test/jwks.json", issuer: \(Self.issuer), audience: acme, allow: { consumer: { claim: trips } } }
                  beta-cabs:
                    backend: { type: static-key, keys: { consumer: [{ serviceAccountFile: keys/beta.json, generateIfMissing: true }] } }
                    clients:
                      - { name: rider-app, type: jwt, jwksUrl: "https://login.beta.test/jwks.json", issuer: \(Self.issuer), audience: beta, allow: { consumer: { claim: trips } } }
                """)
            try await RunningGateway.with(
                configuration: path, registry: BackendRegistry([StaticKeySignerFactory()]), clock: clock.gatewayClock, jwksFetcher: fetcher
            ) { gateway in
                #expect(try await eventually { fetcher.asked.withLock { Set($0).count == 2 } })
                let session = try JWSSigner(key: identity).sign(claims: [
                    "iss": .string(Self.issuer), "sub": "rider-1", "aud": "beta", "iat": .integer(clock.now), "exp": .integer(clock.now + 600),
                    "trips": ["trip-1"],
                ])
                #expect(
                    try await eventually {
                        try await gateway.get("/v1/providers/beta-cabs/tokens/consumer?tripId=trip-1", bearer: session).status == 200
                    })
                let readiness = try await RunningGateway.Endpoint(baseURL: gateway.adminURL).get("/readyz")
                #expect(readiness.json["providers"]?.objectValue?["beta-cabs"]?.objectValue?["state"] == .string("ready"))
                #expect(readiness.json["providers"]?.objectValue?["acme-rides"]?.objectValue?["state"] == .string("starting"))
            }
        }
    }

    /// acme-rides' authorizer never answers, under a flood of its riders' requests: they get 503 at its 8-second
    /// timeout and its calls in flight stay within its own cap, while beta-cabs' authorizer is asked and answers long
    /// before acme-rides' timeout could have freed anything beta-cabs waited behind. beta-cabs' own timeout is
    /// generous, so a loaded machine's slow answer is not mistaken for the isolation failing.
    @Test func anAuthorizerThatNeverAnswersLeavesAnotherTenantsAuthorizer() async throws {
        try await AuthorizerServer.with { hanging, hangingURL in
            try await AuthorizerServer.with { healthy, healthyURL in
                hanging.answer(.after(.seconds(30), .allowed))
                healthy.answer(.allowed)
                func provider(_ id: String, _ baseURL: String, timeout: String) -> ProviderYAML {
                    let keys = "keys: { consumer: [{ serviceAccountFile: keys/\(id).json, generateIfMissing: true }] }"
                    let authorizer = "authorizer: { type: http, url: \"\(baseURL)/can-access?tripId={tripId}\", cacheFor: 0s, timeout: \(timeout) }"
                    return ProviderYAML(
                        id, backend: .flow("{ type: static-key, maxConcurrentCalls: 4, queueTimeout: 100ms, \(keys) }"),
                        clients: [ProviderYAML.apiKey("dispatch", TestAPIKey(Self.apiKey), extra: authorizer)])
                }
                try await TemporaryDirectory.with { directory in
                    let path = try directory.write(
                        "config.yaml",
                        ProviderYAML.config(provider("acme-rides", hangingURL, timeout: "8s"), provider("beta-cabs", healthyURL, timeout: "5s")))
                    try await RunningGateway.with(configuration: path, registry: BackendRegistry([StaticKeySignerFactory()]), clock: .system) {
                        gateway in
                        async let flood = withThrowingTaskGroup(of: Int.self) { group in
                            for trip in 0..<24 {
                                group.addTask {
                                    try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=a-\(trip)", bearer: Self.apiKey).status
                                }
                            }
                            return try await group.reduce(into: [Int]()) { $0.append($1) }
                        }
                        var slowest = Duration.zero
                        for trip in 0..<10 {
                            let started = ContinuousClock.now
                            let answer = try await gateway.get("/v1/providers/beta-cabs/tokens/consumer?tripId=b-\(trip)", bearer: Self.apiKey)
                            slowest = max(slowest, ContinuousClock.now - started)
                            #expect(answer.status == 200, "\(answer.text)")
                        }
                        let statuses = try await flood
                        #expect(statuses.allSatisfy { $0 == 503 }, "\(Set(statuses))")
                        #expect(hanging.calls <= 4 + 4, "\(hanging.calls) calls reached the hanging authorizer")
                        // Anything beta-cabs waited behind would be freed only by acme-rides' 8-second timeout.
                        #expect(slowest < .seconds(6), "beta-cabs' slowest answer took \(slowest)")
                    }
                }
            }
        }
    }

    /// Whatever a request names (providers, token types, credentials, push paths, admin paths), no label takes it:
    /// the series a scrape holds stay bounded by the configuration.
    @Test func metricLabelsNeverTakeWhatARequestNames() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
            _ = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=warm", bearer: GatewayFixture.apiKey)
            let before = Set(try await gateway.metrics().split(separator: "\n").filter { !$0.hasPrefix("#") }.map { $0.split(separator: " ")[0] })
            for index in 0..<100 {
                let name = "made-up-\(index)-\(UUID().uuidString.prefix(8).lowercased())"
                _ = try await gateway.get("/v1/providers/\(name)/tokens/consumer?tripId=t", bearer: GatewayFixture.apiKey)
                _ = try await gateway.get("/v1/providers/acme-rides/tokens/\(name)?tripId=t", bearer: GatewayFixture.apiKey)
                _ = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=\(name)", bearer: "key-\(name)")
                _ = try await gateway.get("/\(name)")
                _ = try await admin.request("POST", "/events/v1/pubsub/\(name)", bearer: "token-\(name)")
                _ = try await admin.request("POST", "/admin/v1/providers/\(name)/contexts/consumer/t/end", bearer: "key-\(name)")
            }
            let scrape = try await gateway.metrics()
            let after = Set(scrape.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { $0.split(separator: " ")[0] })
            #expect(!scrape.contains("made-up-"))
            // A few new series (the codes these refusals count under, with provider=""), never one per request.
            #expect(after.subtracting(before).count <= 25, "\(after.subtracting(before).sorted())")
        }
    }
}
