import AsyncHTTPClient
import Foundation
import GoogleIAMSigner
import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// What tenants share on Google IAM stays bounded per tenant: the gateway signs every tenant's tokens with its one
/// identity, so one tenant's new-trip storm must not use up the calls, quota or connections the others need, and one
/// account IAM refuses must not stop another account's tokens.
@Suite(.timeLimit(.minutes(5))) struct TenantIsolationIAMTests {
    static let betaConsumer = "fleet-consumer@beta-cabs.iam.gserviceaccount.com"
    static let betaKey = "beta-dispatch-key-0123456789"

    /// A google-iam provider against the stand-in; `extra` lines join its backend section.
    static func provider(
        _ id: String, accounts: String, key: String, credentials: String, _ fixture: IAMFixture, extra: [String] = []
    ) -> ProviderYAML {
        let backend = """
            backend:
              type: google-iam
              serviceAccounts: { \(accounts) }
              credentialsFile: \(credentials)
              endpoints:
                iamCredentials: \(fixture.standIn.baseURL)
                publicKeys: \(fixture.standIn.baseURL)/service_accounts/v1/jwk/{serviceAccount}
                oauthToken: \(fixture.standIn.baseURL)/token
            \(extra.map { "  \($0)\n" }.joined())
            """
        return ProviderYAML(
            id, backend: .yaml(backend), clients: [ProviderYAML.apiKey("dispatch", TestAPIKey(key), allow: "{ consumer: any, driver: any }")])
    }

    static func withGateway(_ fixture: IAMFixture, config: String, _ body: (RunningGateway) async throws -> Void) async throws {
        let registry = BackendRegistry([GoogleIAMSignerFactory(httpClient: HTTPClient.shared, environment: try fixture.environment())])
        try await RunningGateway.with(configuration: config, registry: registry, clock: .system, body)
    }

    /// The consumer account's grant is revoked: its calls fail and its circuit opens, while the same tenant's driver
    /// tokens (another account) are still minted, and readiness names the consumer circuit alone.
    @Test func aRevokedAccountOpensOnlyItsOwnTokenTypesCircuit() async throws {
        try await IAMFixture.run(grants: [IAMFixture.runtime: [IAMFixture.driver]]) { fixture in
            let credentials = try await fixture.runtimeKeyFile()
            let config = try fixture.directory.write(
                "config.yaml",
                ProviderYAML.config(
                    Self.provider(
                        "acme-rides", accounts: "consumer: \(IAMFixture.consumer), driver: \(IAMFixture.driver)", key: IAMFixture.apiKey,
                        credentials: credentials, fixture, extra: ["circuitBreaker: { consecutiveFailures: 3, openFor: 60s }"])))
            try await Self.withGateway(fixture, config: config) { gateway in
                for trip in 0..<5 {
                    let refused = try await gateway.get(IAMFixture.token("consumer", "trip-\(trip)"), bearer: IAMFixture.apiKey)
                    #expect(refused.status == 503, "\(refused.text)")
                }
                let scrape = MetricsScrape(try await gateway.metrics())
                let labels = ["provider": "acme-rides", "call": "backend"]
                #expect(scrape["tokengate_circuit_state", labels.merging(["token_type": "consumer"]) { $1 }] == 2)
                #expect(scrape["tokengate_circuit_state", labels.merging(["token_type": "driver"]) { $1 }] == 0)
                for vehicle in 0..<3 {
                    let served = try await gateway.get(IAMFixture.token("driver", "vehicle-\(vehicle)"), bearer: IAMFixture.apiKey)
                    #expect(served.status == 200, "\(served.text)")
                }
                let details = try await RunningGateway.Endpoint(baseURL: gateway.adminURL).get("/readyz/providers/acme-rides")
                let reasons = details.json["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? []
                #expect(reasons.contains { $0.hasPrefix("circuit_open: backend calls for consumer tokens refused") }, "\(reasons)")
                #expect(!reasons.contains { $0.contains("for driver tokens") }, "\(reasons)")
            }
        }
    }

    /// Two tenants sign through IAM with the gateway's one identity. One floods new trips: past its mint budget it is
    /// refused `429` at once (its IAM calls bounded by the budget), while the other's new trips are all minted; and
    /// each tenant's calls carry its own quota project, so Google bills and limits each on its own.
    @Test func oneTenantsMintStormStaysWithinItsBudgetAndEachTenantIsBilledOnItsOwnProject() async throws {
        try await IAMFixture.run(grants: [IAMFixture.runtime: [IAMFixture.consumer, Self.betaConsumer]]) { fixture in
            try await fixture.standIn.control(#"{"accounts": [{"email": "\#(Self.betaConsumer)", "projectId": "beta-cabs"}]}"#)
            try await fixture.standIn.control(#"{"grants": {"\#(IAMFixture.runtime)": ["\#(IAMFixture.consumer)", "\#(Self.betaConsumer)"]}}"#)
            let credentials = try await fixture.runtimeKeyFile()
            let config = try fixture.directory.write(
                "config.yaml",
                ProviderYAML.config(
                    Self.provider(
                        "acme-rides", accounts: "consumer: \(IAMFixture.consumer)", key: IAMFixture.apiKey, credentials: credentials, fixture,
                        extra: ["mintBudget: { rate: 5/s, burst: 10 }", "quotaProject: acme-rides"]),
                    Self.provider(
                        "beta-cabs", accounts: "consumer: \(Self.betaConsumer)", key: Self.betaKey, credentials: credentials, fixture,
                        extra: ["quotaProject: beta-cabs"])))
            try await Self.withGateway(fixture, config: config) { gateway in
                #expect(try await eventually { try await gateway.get("/readyz").status == 200 })
                let started = ContinuousClock.now
                // 200 new trips of acme-rides, 16 at once, beside 20 new trips of beta-cabs.
                async let storm = Self.newTrips(gateway, provider: "acme-rides", key: IAMFixture.apiKey, count: 200, concurrency: 16)
                let beta = try await Self.newTrips(gateway, provider: "beta-cabs", key: Self.betaKey, count: 20, concurrency: 2)
                let acme = try await storm
                let elapsed = ContinuousClock.now - started

                #expect(beta.allSatisfy { $0.status == 200 }, "\(beta.filter { $0.status != 200 }.prefix(3))")
                let refused = acme.filter { $0.status == 429 }
                #expect(!refused.isEmpty)
                #expect(refused.allSatisfy { $0.code == "rate_limited" && $0.retryAfter != nil })
                #expect(acme.allSatisfy { [200, 429].contains($0.status) })
                // Its IAM calls: the budget's burst and rate over the storm, and no more.
                let log = try await fixture.standIn.calls()["log"]?.arrayValue ?? []
                let signs = log.compactMap(\.objectValue).filter { $0["kind"]?.stringValue == "signJwt" }
                let acmeSigns = signs.filter { $0["target"]?.stringValue == IAMFixture.consumer }
                let bound = 1 + 10 + Int(5 * (Double(elapsed.components.seconds) + 1))
                #expect(acmeSigns.count <= bound, "\(acmeSigns.count) signJwt calls for acme-rides in \(elapsed)")
                // One call per token served, and the signer's readiness probe of the account at start.
                #expect(acmeSigns.count == acme.filter { $0.status == 200 }.count + 1)
                #expect(acmeSigns.allSatisfy { $0["userProject"]?.stringValue == "acme-rides" })
                let betaSigns = signs.filter { $0["target"]?.stringValue == Self.betaConsumer }
                #expect(betaSigns.count == 20 + 1)
                #expect(betaSigns.allSatisfy { $0["userProject"]?.stringValue == "beta-cabs" })
                let scrape = MetricsScrape(try await gateway.metrics())
                #expect(scrape["tokengate_rate_limited_total", ["provider": "acme-rides", "scope": "mint_budget"]] == Double(refused.count))
                #expect(scrape["tokengate_rate_limited_total", ["provider": "beta-cabs", "scope": "mint_budget"]] ?? 0 == 0)
            }
        }
    }

    struct Answer: Sendable {
        var status: Int
        var code: String?
        var retryAfter: String?
    }

    /// `count` consumer tokens for new trips of `provider`, `concurrency` at a time.
    static func newTrips(_ gateway: RunningGateway, provider: String, key: String, count: Int, concurrency: Int) async throws -> [Answer] {
        try await withThrowingTaskGroup(of: Answer.self) { group in
            var answers: [Answer] = []
            for index in 0..<count {
                if index >= concurrency, let answer = try await group.next() { answers.append(answer) }
                group.addTask {
                    let answer = try await gateway.get("/v1/providers/\(provider)/tokens/consumer?tripId=new-\(index)", bearer: key)
                    return Answer(status: answer.status, code: answer.errorCode, retryAfter: answer.header("Retry-After"))
                }
            }
            for try await answer in group { answers.append(answer) }
            return answers
        }
    }
}
