import AsyncHTTPClient
import GoogleIAMSigner
import JOSE
import Logging
import StaticKeySigner
import Testing
import TokenGateCore
import TokenGateTesting

/// One tenant's broken IAM never takes the gateway out of service: a `google-iam` tenant IAM refuses (its grant
/// revoked, or a tenant added before its grant) and one whose key set cannot be fetched sit beside a static-key
/// tenant, and both `/readyz` answer 200 while the healthy tenant serves; the broken one is named in the admin
/// details, its gauge and its route.
@Suite(.timeLimit(.minutes(5))) struct TenantReadinessIAMTests {
    static let staticKey = "static-fleet-key-0123456789"

    /// `acme-rides` on IAM (through the stand-in), and `static-fleet` on a key of its own; `includeIAM: false`
    /// leaves the IAM tenant out (the configuration before it is added).
    static func writeConfig(_ fixture: IAMFixture, includeIAM: Bool = true) async throws -> String {
        let backend = """
            backend:
              type: google-iam
              serviceAccounts: { consumer: \(IAMFixture.consumer) }
              credentialsFile: \(try await fixture.runtimeKeyFile())
              endpoints:
                iamCredentials: \(fixture.standIn.baseURL)
                publicKeys: \(fixture.standIn.baseURL)/service_accounts/v1/jwk/{serviceAccount}
                oauthToken: \(fixture.standIn.baseURL)/token
            """
        let iam = ProviderYAML("acme-rides", backend: .yaml(backend), clients: [ProviderYAML.apiKey("dispatch", TestAPIKey(IAMFixture.apiKey))])
        let staticFleet = ProviderYAML(
            "static-fleet", backend: .staticKey(["consumer"], file: "keys/static.json"),
            clients: [ProviderYAML.apiKey("dispatch", TestAPIKey(Self.staticKey))])
        return try fixture.directory.write("config.yaml", ProviderYAML.config(providers: [staticFleet] + (includeIAM ? [iam] : [])))
    }

    static func withGateway(_ fixture: IAMFixture, config: String, _ body: (RunningGateway) async throws -> Void) async throws {
        let registry = BackendRegistry([
            GoogleIAMSignerFactory(httpClient: HTTPClient.shared, environment: try fixture.environment()), StaticKeySignerFactory(),
        ])
        try await RunningGateway.with(configuration: config, registry: registry, clock: .system, body)
    }

    /// Waits (bounded) until the admin listener names `provider` in `state` with a reason containing `reason`.
    static func waitForProvider(_ gateway: RunningGateway, _ provider: String, state: String, reason: String) async throws -> JSONObject {
        let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
        var last = JSONObject()
        let seen = try await eventually(within: .seconds(30)) {
            last = try await admin.get("/readyz").json["providers"]?.objectValue?[provider]?.objectValue ?? [:]
            let reasons = last["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? []
            return last["state"] == .string(state) && reasons.contains { $0.contains(reason) }
        }
        #expect(seen, "\(provider) never became \(state) for '\(reason)': \(last)")
        return last
    }

    /// What every scenario must show: both listeners ready, the healthy tenant served, the broken one refused and
    /// named on its route and gauge.
    static func expectIsolated(_ gateway: RunningGateway) async throws {
        let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
        #expect(try await gateway.get("/readyz").status == 200)
        #expect(try await admin.get("/readyz").status == 200)
        #expect(try await gateway.get("/v1/providers/static-fleet/tokens/consumer?tripId=t-1", bearer: staticKey).status == 200)
        let refused = try await gateway.get(IAMFixture.token(), bearer: IAMFixture.apiKey)
        #expect(refused.status == 503, "\(refused.text)")
        #expect(try await admin.get("/readyz/providers/acme-rides").status == 503)
        #expect(try await admin.get("/readyz/providers/static-fleet").status == 200)
        let metrics = try await gateway.metrics()
        #expect(metrics.contains(#"tokengate_provider_ready{provider="acme-rides"} 0"#))
        #expect(metrics.contains(#"tokengate_provider_ready{provider="static-fleet"} 1"#))
        #expect(metrics.contains("tokengate_ready 1"))
    }

    @Test func aRevokedIAMGrantKeepsTheGatewayReady() async throws {
        try await IAMFixture.run(grants: [IAMFixture.runtime: []]) { fixture in
            try await Self.withGateway(fixture, config: try await Self.writeConfig(fixture)) { gateway in
                let state = try await Self.waitForProvider(gateway, "acme-rides", state: "not_ready", reason: "iam.serviceAccounts.signJwt")
                #expect(state["since"]?.stringValue != nil)
                try await Self.expectIsolated(gateway)
            }
        }
    }

    @Test func anUnreachableKeySetKeepsTheGatewayReady() async throws {
        try await IAMFixture.run { fixture in
            try await fixture.standIn.control(#"{"faults": {"publicKeys": {"status": 500, "count": -1}}}"#)
            try await Self.withGateway(fixture, config: try await Self.writeConfig(fixture)) { gateway in
                _ = try await Self.waitForProvider(gateway, "acme-rides", state: "not_ready", reason: "not fetched yet")
                try await Self.expectIsolated(gateway)
            }
        }
    }

    @Test func aTenantAddedBeforeItsGrantKeepsTheGatewayReady() async throws {
        try await IAMFixture.run(grants: [IAMFixture.runtime: []]) { fixture in
            let config = try await Self.writeConfig(fixture, includeIAM: false)
            try await Self.withGateway(fixture, config: config) { gateway in
                #expect(try await gateway.get("/readyz").status == 200)
                _ = try await Self.writeConfig(fixture)
                try await gateway.reloader.reload(trigger: "test")
                _ = try await Self.waitForProvider(gateway, "acme-rides", state: "not_ready", reason: "iam.serviceAccounts.signJwt")
                try await Self.expectIsolated(gateway)
                // Granted: it becomes ready by itself, and serves.
                try await fixture.standIn.control(#"{"grants": {"\#(IAMFixture.runtime)": ["\#(IAMFixture.consumer)"]}}"#)
                #expect(
                    try await eventually(within: .seconds(30)) {
                        try await RunningGateway.Endpoint(baseURL: gateway.adminURL).get("/readyz/providers/acme-rides").status == 200
                    })
                #expect(try await gateway.get(IAMFixture.token(), bearer: IAMFixture.apiKey).status == 200)
            }
        }
    }
}
