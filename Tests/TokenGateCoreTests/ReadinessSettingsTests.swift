import Testing
import TokenGateCore

/// `server.readiness`: defaults, values, and located errors (a required provider must be one the configuration
/// declares).
@Suite struct ReadinessSettingsTests {
    static let providers = """
        providers:
          acme-rides:
            backend: { type: static-key }
            clients:
              - { name: app, type: api-key, keySha256: 9ae4a3e2a48a06ab46007841990560acb1408babd4b1965ebe237cfec90382b6, allow: { consumer: any } }

        """

    private func parse(_ server: String) throws -> GatewayConfiguration {
        let text = "server:\n  readiness: \(server)\n" + Self.providers
        return try ConfigurationParser().parse(ConfigNode.parse(Array(text.utf8), file: ConfigFile(path: "config.yaml", environment: [:])))
    }

    @Test func noTenantGatesTheOthersByDefault() throws {
        let readiness = try ConfigurationParser().parse(
            ConfigNode.parse(Array(Self.providers.utf8), file: ConfigFile(path: "config.yaml", environment: [:]))
        ).server.readiness
        #expect(readiness.requireProviders.isEmpty)
        #expect(readiness.startTimeout == .seconds(30))
    }

    @Test func settingsAreRead() throws {
        let readiness = try parse("{ requireProviders: [acme-rides], startTimeout: 0s }").server.readiness
        #expect(readiness.requireProviders == [ProviderID("acme-rides")])
        #expect(readiness.startTimeout == .zero)
    }

    @Test(arguments: [
        ("{ requireProviders: [nobody-here] }", "config.yaml:2:", "no provider 'nobody-here' is declared"),
        ("{ requireProviders: [acme-rides, acme-rides] }", "config.yaml:2:", "acme-rides is listed twice"),
        ("{ requireProviders: [Not_An_ID] }", "config.yaml:2:", "'Not_An_ID' is not a provider ID"),
        ("{ startTimeout: 11m }", "config.yaml:2:", "must be between 0s and 10m"),
        ("{ gate: all }", "config.yaml:2:", "unknown key"),
    ])
    func aSettingThatCannotHoldIsALocatedError(server: String, location: String, message: String) {
        do {
            _ = try parse(server)
            Issue.record("parsed")
        } catch {
            #expect("\(error)".contains(location), "\(error)")
            #expect("\(error)".contains("server.readiness"), "\(error)")
            #expect("\(error)".contains(message), "\(error)")
        }
    }
}
