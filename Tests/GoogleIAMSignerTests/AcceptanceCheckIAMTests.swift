import AsyncHTTPClient
import GoogleIAMSigner
import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// The acceptance check of a keyless tenant: tokens IAM signs as each Fleet Engine account (through the Google
/// stand-in), checked by the Fleet Engine stand-in against the keys Google publishes for those accounts. The
/// consumer account holds its Fleet Engine role and is accepted; the driver account holds none and is refused.
@Suite(.timeLimit(.minutes(5))) struct AcceptanceCheckIAMTests {
    @Test func tokensIAMSignsAreCheckedPerAccountAgainstGooglesPublishedKeys() async throws {
        try await IAMFixture.run { fixture in
            try await FleetEngineStandIn.with { fleetEngine in
                var accounts = JSONObject()
                for account in [IAMFixture.consumer, IAMFixture.driver] {
                    accounts[account] = .object(["jwksUrl": .string("\(fixture.standIn.baseURL)/service_accounts/v1/jwk/\(account)")])
                }
                try await fleetEngine.control([
                    "accounts": .object(accounts),
                    "roles": .object([IAMFixture.project: .object([IAMFixture.consumer: .array([.string("roles/fleetengine.consumerSdkUser")])])]),
                ])
                let config = try fixture.writeConfig(
                    credentialsFile: try await fixture.runtimeKeyFile(),
                    providerExtra: ["acceptanceCheck: { tokenTypes: [consumer, driver], every: 1h, endpoint: \"\(fleetEngine.baseURL)\" }"])
                let registry = BackendRegistry([GoogleIAMSignerFactory(httpClient: HTTPClient.shared, environment: try fixture.environment())])
                try await RunningGateway.with(configuration: config, registry: registry, clock: .system) { gateway in
                    let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
                    var checks = JSONObject()
                    let done = try await eventually(within: .seconds(60), every: .milliseconds(100)) {
                        checks = try await admin.get("/readyz/providers/acme-rides").json["fleetEngine"]?.objectValue ?? [:]
                        return checks.count == 2
                    }
                    #expect(done, "\(checks)")
                    let consumer = checks["consumer"]?.objectValue ?? [:]
                    let driver = checks["driver"]?.objectValue ?? [:]
                    #expect(consumer["verdict"]?.stringValue == "accepted" && consumer["status"]?.integerValue == 404, "\(consumer)")
                    #expect(driver["verdict"]?.stringValue == "refused" && driver["googleStatus"]?.stringValue == "PERMISSION_DENIED", "\(driver)")
                    // Each was signed by its own account, found among Google's published keys of that account.
                    let calls = try await fleetEngine.calls()
                    #expect(
                        calls.contains { $0["account"]?.stringValue == IAMFixture.consumer && $0["verdict"]?.stringValue == "not_found" }, "\(calls)")
                    #expect(calls.contains { $0["account"]?.stringValue == IAMFixture.driver && $0["verdict"]?.stringValue == "role" }, "\(calls)")
                    #expect(try await admin.get("/readyz").status == 200)
                }
            }
        }
    }
}
