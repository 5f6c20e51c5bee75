import Foundation
import Logging
import Testing
import TokenGateCore
import TokenGateCoreTesting

/// `providers: { include: … }` as the parser and `check-config` read it: tenants from files beside inline ones,
/// each mistake located in the file that has it, and at start (no last good version yet) a broken tenant file is
/// an error like any other.
@Suite struct TenantFilesConfigTests {
    static func tenant(_ id: String) -> String {
        """
        \(id):
          backend: { type: inert, circuitBreaker: off }
          clients:
            - { name: app, type: api-key, keySha256: \(String(repeating: "ab", count: 32)), allow: { consumer: any } }

        """
    }

    static func parse(_ config: String, files: [String: String]) throws -> (GatewayConfiguration, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: "\(directory.path)/providers.d", withIntermediateDirectories: true)
        for (name, text) in files { try directory.write("providers.d/\(name)", text) }
        let path = try directory.write("config.yaml", config)
        let root = try ConfigNode.parse(Array(config.utf8), file: ConfigFile(path: path, environment: [:]))
        return (try ConfigurationParser().parse(root), directory)
    }

    static func error(_ config: String, files: [String: String]) -> String {
        do {
            let (_, directory) = try parse(config, files: files)
            directory.remove()
            return "no error"
        } catch {
            // Paths relative to the test's directory, wherever TMPDIR puts it.
            return "\(error)".replacingOccurrences(of: #"^\S*?/(providers\.d/|config\.yaml)"#, with: "$1", options: .regularExpression)
        }
    }

    @Test func tenantsComeFromFilesBesideInlineOnesInSortedOrder() throws {
        let config =
            "providers:\n" + Self.tenant("inline-fleet").split(separator: "\n").map { "  \($0)" }.joined(separator: "\n")
            + "\n  include: [providers.d/*.yaml, providers.d/extra/*.yml]\n"
        let (configuration, directory) = try Self.parse(config, files: ["b.yaml": Self.tenant("beta-cabs"), "a.yaml": Self.tenant("acme-rides")])
        defer { directory.remove() }
        #expect(configuration.providers.keys.map(\.rawValue).sorted() == ["acme-rides", "beta-cabs", "inline-fleet"])
        #expect(configuration.providerFiles[ProviderID("acme-rides")!]?.hasSuffix("providers.d/a.yaml") == true)
        #expect(configuration.providerFiles[ProviderID("beta-cabs")!]?.hasSuffix("providers.d/b.yaml") == true)
        #expect(configuration.providerFiles[ProviderID("inline-fleet")!] == nil)
        #expect(configuration.includedFiles.map { String($0.path.split(separator: "/").last!) } == ["a.yaml", "b.yaml"])
    }

    @Test(arguments: [
        (
            ["a.yaml": tenant("acme-rides") + tenant("beta-cabs")],
            "providers.d/a.yaml:1:1: a tenant file declares exactly one provider (its project ID, then its section); this one has 2"
        ),
        (
            ["a.yaml": tenant("acme-rides"), "b.yaml": tenant("acme-rides")],
            "providers.d/b.yaml:1:1: acme-rides: provider acme-rides is declared twice (also in "
        ),
        (
            ["a.yaml": tenant("Acme")],
            "providers.d/a.yaml:1:1: Acme: 'Acme' is not a Google Cloud project ID"
        ),
        (
            ["a.yaml": "acme-rides:\n  backend: { type: inert }\n  clients: []\n"],
            "providers.d/a.yaml:3:12: acme-rides.clients: declare at least one client"
        ),
    ])
    func aMistakeInATenantFileIsLocatedInThatFile(files: [String: String], expected: String) {
        let message = Self.error("providers:\n  include: providers.d/*.yaml\n", files: files)
        #expect(message.hasPrefix(expected), "\(message)")
    }

    @Test func aPatternThatMatchesNothingIsAWarningAndNoProviderAtAllAnError() throws {
        let message = Self.error("providers:\n  include: providers.d/*.yaml\n", files: [:])
        #expect(message.hasPrefix("config.yaml:2:3: providers: declare at least one provider"), "\(message)")
        let config =
            "providers:\n" + Self.tenant("inline-fleet").split(separator: "\n").map { "  \($0)" }.joined(separator: "\n")
            + "\n  include: providers.d/*.yaml\n"
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try directory.write("config.yaml", config)
        let diagnostics = ConfigDiagnostics()
        let root = try ConfigNode.parse(Array(config.utf8), file: ConfigFile(path: path, environment: [:], diagnostics: diagnostics))
        _ = try ConfigurationParser().parse(root)
        #expect(diagnostics.all.map(\.message) == ["no file matches providers.d/*.yaml"])
    }

    /// At start there is no last good version: `serve` refuses a broken tenant file, and `check-config` lists it
    /// with the others' mistakes.
    @Test func atStartABrokenTenantFileIsAnErrorAndCheckListsEveryOne() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: "\(directory.path)/providers.d", withIntermediateDirectories: true)
        try directory.write("providers.d/a.yaml", Self.tenant("acme-rides").replacingOccurrences(of: "clients:", with: "clientz:"))
        try directory.write("providers.d/b.yaml", "beta-cabs: [")
        try directory.write("providers.d/c.yaml", Self.tenant("good-fleet"))
        let path = try directory.write("config.yaml", "providers:\n  include: providers.d/*.yaml\n")
        let assembler = GatewayAssembler(
            registry: BackendRegistry([InertBackendFactory()]), environment: [:], clock: ManualClock(wallSeconds: 1_700_000_000).gatewayClock,
            logger: .init(label: "test"), jwksFetcher: ScriptedJWKSFetcher(.failure("none")))
        await #expect(throws: ConfigError.self) { try await assembler.build(path: path) }
        let check = await assembler.check(path: path)
        let byFile = Dictionary(uniqueKeysWithValues: check.errors.map { (String($0.file.split(separator: "/").last!), $0) })
        #expect(byFile.keys.sorted() == ["a.yaml", "b.yaml"])
        #expect(byFile["a.yaml"]?.keyPath == "acme-rides.clientz")
        #expect(byFile["b.yaml"]?.message.contains("did not find expected node content") == true, "\(check.errors)")
    }
}
