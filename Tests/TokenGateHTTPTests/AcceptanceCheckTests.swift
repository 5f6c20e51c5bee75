import Foundation
import JOSE
import Logging
import StaticKeySigner
import Testing
import TokenGateCore
import TokenGateCoreTesting
import TokenGateTesting

/// The live acceptance check (`acceptanceCheck:`) against the Fleet Engine stand-in, which admits a call only as
/// Fleet Engine does: a token of each checked type is minted, verified and used for one read; 404 (or 200) is
/// `accepted`, 401/403 `refused`, anything else no verdict. The result shows per provider and token type on the
/// admin listener, in `tokengate_fleet_engine_accepted` and in the log, and never in the process's readiness.
@Suite(.timeLimit(.minutes(5))) struct AcceptanceCheckTests {
    static let consumerAccount = "tokengate-consumer@acme-rides.iam.gserviceaccount.com"
    static let driverAccount = "tokengate-driver@acme-rides.iam.gserviceaccount.com"

    /// A static-key provider whose keys the test generates at start, checked against `standIn` every `every`.
    static func provider(_ id: String, types: [String], check: String) -> String {
        let keys = types.map { "\($0): [{ serviceAccountFile: keys/\(id)-\($0).json, generateIfMissing: true }]" }.joined(separator: ", ")
        return """
              \(id):
                backend: { type: static-key, keys: { \(keys) } }
                acceptanceCheck: \(check)
                clients:
                  - { name: dispatch, type: api-key, keySha256: \(String(repeating: "ab", count: 32)), allow: { consumer: any } }
            """
    }

    /// Registers each account of `provider` with the stand-in, its keys read from the gateway's JWKS.
    static func register(_ accounts: [String], of provider: String, gateway: RunningGateway, standIn: FleetEngineStandIn) async throws {
        var entries = JSONObject()
        for account in accounts { entries[account] = .object(["jwksUrl": .string("\(gateway.baseURL)/v1/providers/\(provider)/jwks.json")]) }
        try await standIn.control(["accounts": .object(entries)])
    }

    /// Grants `roles` to `account` in `project` (replacing what it had there).
    static func grant(_ roles: [String], to account: String, in project: String, standIn: FleetEngineStandIn) async throws {
        try await standIn.control(["roles": .object([project: .object([account: .array(roles.map(JSONValue.string))])])])
    }

    /// What the admin readiness says about `provider`: its whole entry.
    static func readiness(_ gateway: RunningGateway, _ provider: String) async throws -> JSONObject {
        try await RunningGateway.Endpoint(baseURL: gateway.adminURL).get("/readyz/providers/\(provider)").json
    }

    /// The last check of `type` at `provider`, once there is one whose verdict is `verdict`.
    static func check(_ gateway: RunningGateway, _ provider: String, _ type: String, becomes verdict: String) async throws -> JSONObject? {
        var found: JSONObject?
        _ = try await eventually(within: .seconds(60), every: .milliseconds(100)) {
            found = try await readiness(gateway, provider)["fleetEngine"]?.objectValue?[type]?.objectValue
            return found?["verdict"]?.stringValue == verdict
        }
        return found
    }

    @Test func fleetEngineAcceptsEachCheckedTypeAndTheAnswerShowsEverywhereButTheProcessReadiness() async throws {
        try await FleetEngineStandIn.with { standIn in
            try await TemporaryDirectory.with { directory in
                let logs = LogRecorder()
                let path = try directory.write(
                    "config.yaml",
                    "providers:\n"
                        + Self.provider(
                            "acme-rides", types: ["consumer", "driver"],
                            check: "{ tokenTypes: [consumer, driver], every: 1h, endpoint: \"\(standIn.baseURL)\" }"))
                try await RunningGateway.with(
                    configuration: path, registry: BackendRegistry([StaticKeySignerFactory()]), clock: .system, logger: logs.logger
                ) { gateway in
                    try await Self.register([Self.consumerAccount, Self.driverAccount], of: "acme-rides", gateway: gateway, standIn: standIn)
                    try await Self.grant(["roles/fleetengine.consumerSdkUser"], to: Self.consumerAccount, in: "acme-rides", standIn: standIn)
                    try await Self.grant(["roles/fleetengine.driverSdkUser"], to: Self.driverAccount, in: "acme-rides", standIn: standIn)
                    // The accounts are registered after the gateway started: its first checks may have found the
                    // stand-in not knowing them yet (401), so a reload that changes the interval checks again now.
                    try directory.write(
                        "config.yaml",
                        "providers:\n"
                            + Self.provider(
                                "acme-rides", types: ["consumer", "driver"],
                                check: "{ tokenTypes: [consumer, driver], every: 2h, endpoint: \"\(standIn.baseURL)\" }"))
                    try await gateway.reloader.reload(trigger: "test")
                    let consumer = try #require(try await Self.check(gateway, "acme-rides", "consumer", becomes: "accepted"))
                    let driver = try #require(try await Self.check(gateway, "acme-rides", "driver", becomes: "accepted"))
                    #expect(consumer["status"]?.integerValue == 404 && driver["status"]?.integerValue == 404, "\(consumer) \(driver)")
                    #expect(consumer["checkedAt"]?.stringValue?.hasSuffix("Z") == true)

                    // Fleet Engine saw one authenticated, authorised read of each, for the configured ID.
                    let calls = try await standIn.calls().filter { $0["verdict"]?.stringValue == "not_found" }
                    #expect(Set(calls.compactMap { $0["rpc"]?.stringValue }) == ["GetTrip", "GetVehicle"], "\(calls)")
                    #expect(calls.allSatisfy { $0["path"]?.stringValue?.hasSuffix("/tokengate-acceptance-check") == true }, "\(calls)")
                    #expect(Set(calls.compactMap { $0["account"]?.stringValue }) == [Self.consumerAccount, Self.driverAccount])

                    let readiness = try await Self.readiness(gateway, "acme-rides")
                    #expect(readiness["state"]?.stringValue == "ready", "\(readiness)")
                    let scrape = MetricsScrape(try await gateway.metrics())
                    #expect(scrape["tokengate_fleet_engine_accepted", ["provider": "acme-rides", "token_type": "consumer"]] == 1)
                    #expect(scrape["tokengate_fleet_engine_accepted", ["provider": "acme-rides", "token_type": "driver"]] == 1)
                    #expect(
                        (scrape["tokengate_fleet_engine_checks_total", ["provider": "acme-rides", "token_type": "consumer", "verdict": "accepted"]]
                            ?? 0) >= 1)
                    #expect(logs.all.contains { $0.message == "Fleet Engine accepts the provider's tokens" && $0.metadata["token_type"] == "driver" })
                    // The probe's tokens never reach the cache, and never the log.
                    #expect(gateway.service.generation.providers[ProviderID("acme-rides")!]!.cache.count == 0)
                    #expect(!logs.all.contains { $0.text.contains("eyJ") }, "\(logs.all.filter { $0.text.contains("eyJ") })")
                }
            }
        }
    }

    /// Each way Fleet Engine refuses a tenant's tokens, as operators meet them: the account's role removed, the
    /// role granted in another project than the provider's, and a token Fleet Engine finds expired (its clock
    /// ahead). Each is `refused` with Fleet Engine's answer, the provider degraded (it still serves: the tokens are
    /// valid, the tenant's Fleet Engine setup is not), the process ready, and a fix seen at the next check.
    @Test func aRemovedRoleTheWrongProjectAndAnExpiredTokenAreRefusedAndTheFixIsSeen() async throws {
        try await FleetEngineStandIn.with { standIn in
            try await TemporaryDirectory.with { directory in
                let logs = LogRecorder()
                let path = try directory.write(
                    "config.yaml",
                    "providers:\n"
                        + Self.provider(
                            "acme-rides", types: ["consumer"], check: "{ tokenTypes: [consumer], every: 1s, endpoint: \"\(standIn.baseURL)\" }"))
                try await RunningGateway.with(
                    configuration: path, registry: BackendRegistry([StaticKeySignerFactory()]), clock: .system, logger: logs.logger
                ) { gateway in
                    try await Self.register([Self.consumerAccount], of: "acme-rides", gateway: gateway, standIn: standIn)
                    try await Self.grant(["roles/fleetengine.consumerSdkUser"], to: Self.consumerAccount, in: "acme-rides", standIn: standIn)
                    _ = try #require(try await Self.check(gateway, "acme-rides", "consumer", becomes: "accepted"))

                    // The role removed.
                    try await Self.grant([], to: Self.consumerAccount, in: "acme-rides", standIn: standIn)
                    let removed = try #require(try await Self.check(gateway, "acme-rides", "consumer", becomes: "refused"))
                    #expect(removed["status"]?.integerValue == 403 && removed["googleStatus"]?.stringValue == "PERMISSION_DENIED", "\(removed)")
                    let degraded = try await Self.readiness(gateway, "acme-rides")
                    #expect(degraded["state"]?.stringValue == "degraded", "\(degraded)")
                    let reasons = degraded["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? []
                    #expect(
                        reasons.contains { $0.hasPrefix("fleet_engine_refused: Fleet Engine refuses consumer tokens (403 PERMISSION_DENIED)") },
                        "\(reasons)")
                    #expect(try await RunningGateway.Endpoint(baseURL: gateway.adminURL).get("/readyz").status == 200)
                    #expect(try await gateway.get("/readyz").status == 200)
                    #expect(
                        MetricsScrape(try await gateway.metrics())[
                            "tokengate_fleet_engine_accepted", ["provider": "acme-rides", "token_type": "consumer"]] == 0)
                    // (A first check may have come before the account was registered: 401, refused too.)
                    let line = logs.all.last { $0.message == "Fleet Engine refuses the provider's tokens" }
                    #expect(
                        line?.level == .error && line?.metadata["answer"] == "403 PERMISSION_DENIED" && line?.metadata["was"] == "accepted",
                        "\(String(describing: line))")

                    // The role granted, but in another project: Fleet Engine grants roles per project.
                    try await Self.grant(["roles/fleetengine.consumerSdkUser"], to: Self.consumerAccount, in: "other-project", standIn: standIn)
                    try await standIn.control(#"{"reset": ["calls"]}"#)
                    #expect(try await eventually(within: .seconds(30), every: .milliseconds(100)) { try await standIn.calls().count >= 2 })
                    let wrongProject = try #require(try await Self.check(gateway, "acme-rides", "consumer", becomes: "refused"))
                    #expect(wrongProject["status"]?.integerValue == 403, "\(wrongProject)")
                    #expect(try await standIn.verdicts().allSatisfy { $0 == "role" })

                    // Granted where it belongs: accepted again, the provider ready again.
                    try await Self.grant(["roles/fleetengine.consumerSdkUser"], to: Self.consumerAccount, in: "acme-rides", standIn: standIn)
                    _ = try #require(try await Self.check(gateway, "acme-rides", "consumer", becomes: "accepted"))
                    #expect(try await Self.readiness(gateway, "acme-rides")["state"]?.stringValue == "ready")

                    // Fleet Engine's clock two hours ahead: the fresh token is already expired there. 401.
                    try await standIn.control(#"{"clockOffsetSec": 7200}"#)
                    let expired = try #require(try await Self.check(gateway, "acme-rides", "consumer", becomes: "refused"))
                    #expect(expired["status"]?.integerValue == 401 && expired["googleStatus"]?.stringValue == "UNAUTHENTICATED", "\(expired)")
                    #expect(try await standIn.verdicts().last == "expired")
                }
            }
        }
    }

    /// An answer that is no verdict (Fleet Engine unavailable) is `unknown`: counted and shown, but the gauge and
    /// the provider's state keep the last verdict; one tenant refused leaves another tenant accepted and
    /// ready.
    @Test func noVerdictKeepsTheLastOneAndOneTenantsRefusalStaysItsOwn() async throws {
        try await FleetEngineStandIn.with { standIn in
            try await TemporaryDirectory.with { directory in
                let check = "{ tokenTypes: [consumer], every: 1s, endpoint: \"\(standIn.baseURL)\" }"
                let path = try directory.write(
                    "config.yaml",
                    "providers:\n" + Self.provider("acme-rides", types: ["consumer"], check: check) + "\n"
                        + Self.provider("beta-cabs", types: ["consumer"], check: check))
                try await RunningGateway.with(configuration: path, registry: BackendRegistry([StaticKeySignerFactory()]), clock: .system) { gateway in
                    let beta = "tokengate-consumer@beta-cabs.iam.gserviceaccount.com"
                    try await Self.register([Self.consumerAccount], of: "acme-rides", gateway: gateway, standIn: standIn)
                    try await Self.register([beta], of: "beta-cabs", gateway: gateway, standIn: standIn)
                    try await Self.grant(["roles/fleetengine.consumerSdkUser"], to: Self.consumerAccount, in: "acme-rides", standIn: standIn)
                    // beta-cabs' account never got its role.
                    _ = try #require(try await Self.check(gateway, "acme-rides", "consumer", becomes: "accepted"))
                    _ = try #require(try await Self.check(gateway, "beta-cabs", "consumer", becomes: "refused"))
                    #expect(try await Self.readiness(gateway, "acme-rides")["state"]?.stringValue == "ready")
                    #expect(try await Self.readiness(gateway, "beta-cabs")["state"]?.stringValue == "degraded")
                    #expect(try await RunningGateway.Endpoint(baseURL: gateway.adminURL).get("/readyz").status == 200)

                    // Fleet Engine unavailable: no verdict for either.
                    try await standIn.control(#"{"fault": {"status": 503, "count": -1}}"#)
                    let unknown = try #require(try await Self.check(gateway, "acme-rides", "consumer", becomes: "unknown"))
                    #expect(
                        unknown["status"]?.integerValue == 503 && unknown["detail"]?.stringValue?.hasPrefix("Fleet Engine answered 503") == true,
                        "\(unknown)")
                    _ = try #require(try await Self.check(gateway, "beta-cabs", "consumer", becomes: "unknown"))
                    let scrape = MetricsScrape(try await gateway.metrics())
                    #expect(scrape["tokengate_fleet_engine_accepted", ["provider": "acme-rides", "token_type": "consumer"]] == 1)
                    #expect(scrape["tokengate_fleet_engine_accepted", ["provider": "beta-cabs", "token_type": "consumer"]] == 0)
                    #expect(
                        (scrape["tokengate_fleet_engine_checks_total", ["provider": "acme-rides", "token_type": "consumer", "verdict": "unknown"]]
                            ?? 0) >= 1)
                    // A check without a verdict says nothing about the tenant: beta-cabs stays degraded on its last.
                    let betaNow = try await Self.readiness(gateway, "beta-cabs")
                    #expect(betaNow["state"]?.stringValue == "degraded", "\(betaNow)")
                    #expect(betaNow["fleetEngine"]?.objectValue?["consumer"]?.objectValue?["lastVerdict"]?.stringValue == "refused", "\(betaNow)")
                    #expect(try await Self.readiness(gateway, "acme-rides")["state"]?.stringValue == "ready")

                    // A reload that drops acme-rides' check drops its results and its series.
                    try directory.write(
                        "config.yaml",
                        "providers:\n"
                            + Self.provider("acme-rides", types: ["consumer"], check: check).replacingOccurrences(
                                of: "    acceptanceCheck: \(check)\n", with: "") + "\n"
                            + Self.provider("beta-cabs", types: ["consumer"], check: check))
                    try await gateway.reloader.reload(trigger: "test")
                    #expect(try await eventually { try await Self.readiness(gateway, "acme-rides")["fleetEngine"] == nil })
                    #expect(
                        MetricsScrape(try await gateway.metrics())[
                            "tokengate_fleet_engine_accepted", ["provider": "acme-rides", "token_type": "consumer"]] == nil)
                }
            }
        }
    }
}
