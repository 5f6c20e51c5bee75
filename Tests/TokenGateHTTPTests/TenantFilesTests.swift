import Foundation
import JOSE
import Logging
import OpenSSLPrimitives
import StaticKeySigner
import Testing
import TokenGateCore
import TokenGateHTTP
import TokenGateTesting

/// Tenants in files of their own (`providers: { include: providers.d/*.yaml }`): a reload applies every tenant
/// whose file is valid, keeps the last good version of one that is not, and removes one whose file is gone.
@Suite struct TenantFilesTests {
    static let acmeKey = "acme-backend-key-0123456789"
    static let betaKey = "beta-backend-key-0123456789"
    static let betaNewKey = "beta-rotated-key-0123456789"

    static func digest(_ key: String) -> String { HexBytes.encode((try? Digest.sha256(Array(key.utf8))) ?? []) }

    /// A tenant file: one provider, a static key generated on first use (its path relative to this file), and
    /// api-key callers.
    static func tenant(_ id: String, keys: [String], keyFile: String? = nil, extra: String = "") -> String {
        let clients = keys.enumerated().map { index, key in
            "    - { name: caller-\(index), type: api-key, keySha256: \(digest(key)), allow: { consumer: any } }"
        }
        return """
            \(id):
              \(extra)backend:
                type: static-key
                keys:
                  consumer: [{ serviceAccountFile: \(keyFile ?? "keys/\(id).json"), generateIfMissing: \(keyFile == nil) }]
              clients:
            \(clients.joined(separator: "\n"))

            """
    }

    static func path(_ provider: String, trip: Int = 1) -> String { "/v1/providers/\(provider)/tokens/consumer?tripId=trip-\(trip)" }

    /// How the acme-rides file is broken: in its YAML, in a value, or in what it names (its build fails).
    enum Breakage: String, CaseIterable, Sendable {
        case syntax, value, missingKeyFile

        var text: String {
            switch self {
            case .syntax: "acme-rides:\n  backend: { type: static-key\n  clients: [\n"
            case .value: TenantFilesTests.tenant("acme-rides", keys: [acmeKey], extra: "cache: { maxEntries: lots }\n  ")
            case .missingKeyFile: TenantFilesTests.tenant("acme-rides", keys: [acmeKey], keyFile: "keys/gone.json")
            }
        }

        /// Where the error is located: `file:line:column: …`.
        var located: String {
            switch self {
            case .syntax: "acme-rides.yaml:3:10: syntax:"
            case .value: "acme-rides.yaml:2:24: acme-rides.cache.maxEntries: expected an integer"
            case .missingKeyFile: "acme-rides.yaml:5:"
            }
        }
    }

    @Test(arguments: Breakage.allCases)
    func aBrokenTenantKeepsItsLastGoodVersionWhileAnotherTenantsChangeApplies(_ breakage: Breakage) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: "\(directory.path)/providers.d", withIntermediateDirectories: true)
        let acmeFile = try directory.write("providers.d/acme-rides.yaml", Self.tenant("acme-rides", keys: [Self.acmeKey]))
        let betaFile = try directory.write("providers.d/beta-cabs.yaml", Self.tenant("beta-cabs", keys: [Self.betaKey]))
        let config = try directory.write("config.yaml", "providers:\n  include: providers.d/*.yaml\n")
        let logs = LogRecorder()
        let clock = ManualClock()
        try await RunningGateway.with(
            configuration: config, registry: BackendRegistry([StaticKeySignerFactory()]), clock: clock.gatewayClock, logger: logs.logger
        ) { gateway in
            let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
            let acmeToken = try await gateway.get(Self.path("acme-rides"), bearer: Self.acmeKey)
            #expect(acmeToken.status == 200, "\(acmeToken.text)")
            #expect(try await gateway.get(Self.path("beta-cabs"), bearer: Self.betaKey).status == 200)
            #expect(try await gateway.get(Self.path("beta-cabs"), bearer: Self.betaNewKey).status == 401)

            // One tenant's file broken, the other's changed (a second key), in one reload.
            try directory.write("providers.d/acme-rides.yaml", breakage.text)
            try directory.write("providers.d/beta-cabs.yaml", Self.tenant("beta-cabs", keys: [Self.betaKey, Self.betaNewKey]))
            let next = try await gateway.reloader.reload(trigger: "test")
            #expect(next.number == 2)

            // The change applied; the broken tenant serves as before, its cached token included.
            #expect(try await gateway.get(Self.path("beta-cabs"), bearer: Self.betaNewKey).status == 200)
            let served = try await gateway.get(Self.path("acme-rides"), bearer: Self.acmeKey)
            #expect(served.status == 200)
            #expect(served.json["token"] == acmeToken.json["token"])
            #expect(try await gateway.get(Self.path("acme-rides", trip: 2), bearer: Self.acmeKey).status == 200)

            // Said in readiness, a metric and the log, located in the tenant's file.
            let ready = try await admin.get("/readyz")
            #expect(ready.status == 200)
            let acme = try #require(ready.json["providers"]?.objectValue?["acme-rides"]?.objectValue)
            #expect(acme["state"] == .string("degraded"))
            let reason = try #require(acme["reasons"]?.arrayValue?.last?.stringValue)
            let located = "\(acmeFile.dropLast("acme-rides.yaml".count))\(breakage.located)"
            #expect(reason.hasPrefix("stale_config: serving the last good configuration; \(located)"), "\(reason)")
            #expect(ready.json["providers"]?.objectValue?["beta-cabs"]?.objectValue?["state"] == .string("ready"))
            let scrape = MetricsScrape(try await gateway.metrics())
            #expect(scrape["tokengate_tenant_config_stale", ["provider": "acme-rides"]] == 1)
            #expect(scrape["tokengate_tenant_config_stale", ["provider": "beta-cabs"]] == 0)
            #expect(scrape["tokengate_tenant_files_broken"] == 1)
            let logged = logs.all.filter { $0.text.contains("tenant file not applied") }
            #expect(logged.count == 1)
            #expect(logged.first?.text.contains("its tenant keeps its last good configuration") == true)
            #expect(logged.first?.text.contains(breakage.located) == true, "\(logged.map(\.text))")

            // A later reload with the file still broken keeps it still; fixed, it applies; a removed file removes.
            #expect(try await gateway.reloader.reload(trigger: "test").staleTenants.keys.map(\.rawValue) == ["acme-rides"])
            #expect(try await gateway.get(Self.path("acme-rides"), bearer: Self.acmeKey).status == 200)
            try directory.write("providers.d/acme-rides.yaml", Self.tenant("acme-rides", keys: [Self.acmeKey]))
            try FileManager.default.removeItem(atPath: betaFile)
            let fixed = try await gateway.reloader.reload(trigger: "test")
            #expect(fixed.staleTenants.isEmpty)
            #expect(fixed.brokenTenantFiles.isEmpty)
            #expect(try await admin.get("/readyz").json["providers"]?.objectValue?["acme-rides"]?.objectValue?["state"] == .string("ready"))
            #expect(try await gateway.get(Self.path("acme-rides"), bearer: Self.acmeKey).status == 200)
            #expect(try await gateway.get(Self.path("beta-cabs"), bearer: Self.betaKey).status == 404)
            let after = MetricsScrape(try await gateway.metrics())
            #expect(after["tokengate_tenant_config_stale", ["provider": "acme-rides"]] == 0)
            #expect(after["tokengate_tenant_files_broken"] == 0)
        }
    }

    @Test func aNewTenantWhoseFileIsBrokenIsNotServedAndTheOthersAre() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: "\(directory.path)/providers.d", withIntermediateDirectories: true)
        try directory.write("providers.d/acme-rides.yaml", Self.tenant("acme-rides", keys: [Self.acmeKey]))
        let config = try directory.write("config.yaml", "providers:\n  include: providers.d/*.yaml\n")
        let logs = LogRecorder()
        try await RunningGateway.with(
            configuration: config, registry: BackendRegistry([StaticKeySignerFactory()]), clock: ManualClock().gatewayClock, logger: logs.logger
        ) { gateway in
            try directory.write("providers.d/beta-cabs.yaml", Breakage.value.text.replacingOccurrences(of: "acme-rides", with: "beta-cabs"))
            let next = try await gateway.reloader.reload(trigger: "test")
            #expect(next.staleTenants.isEmpty)
            #expect(next.brokenTenantFiles.keys.map { $0.hasSuffix("providers.d/beta-cabs.yaml") } == [true])
            #expect(try await gateway.get(Self.path("acme-rides"), bearer: Self.acmeKey).status == 200)
            #expect(try await gateway.get(Self.path("beta-cabs"), bearer: Self.acmeKey).status == 404)
            #expect(logs.all.contains { $0.text.contains("tenant file not applied; its tenant is not served") })
        }
    }
}
