import Foundation
import JOSE
import Testing
import TokenGateCore

/// How `allow:` grants the whole-fleet types and the trusted driver's every-task token: by name only, with located
/// errors for every way of asking too much.
@Suite struct TokenCatalogueConfigTests {
    static let digest = String(repeating: "ab", count: 32)

    private func parse(_ client: String) throws -> (GatewayConfiguration, ConfigFile) {
        let text = """
            providers:
              acme-rides:
                backend: { type: static-key }
                clients:
                  - name: ops
                    type: api-key
                    keySha256: \(Self.digest)
            \(client)
            """
        let file = ConfigFile(path: "config.yaml", environment: [:])
        return (try ConfigurationParser().parse(ConfigNode.parse(Array(text.utf8), file: file)), file)
    }

    private func error(_ client: String) -> String {
        do {
            _ = try parse(client)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test(arguments: [
        (
            "        allow: { fleet-reader: any }",
            "config.yaml:8:32: providers.acme-rides.clients[0].allow.fleet-reader: fleet-reader tokens are wildcards over the whole fleet and are granted only by name: 'fleet-reader: whole-fleet'"
        ),
        (
            "        allow: { delivery-fleet-reader: any }",
            "config.yaml:8:41: providers.acme-rides.clients[0].allow.delivery-fleet-reader: delivery-fleet-reader tokens are wildcards"
        ),
        (
            "        allow: { server: any }\n        allowServerTokens: true",
            "config.yaml:8:26: providers.acme-rides.clients[0].allow.server: server tokens are wildcards"
        ),
        (
            "        allow: { server: whole-fleet }",
            "config.yaml:8:16: providers.acme-rides.clients[0].allow: server tokens open the whole on-demand fleet; a client that needs them must also say allowServerTokens: true"
        ),
        (
            "        allow: { consumer: whole-fleet }",
            "config.yaml:8:28: providers.acme-rides.clients[0].allow.consumer: 'whole-fleet' is only for fleet-reader, delivery-fleet-reader and server tokens"
        ),
        (
            "        allow: { consumer: any }\n        allowServerTokens: true",
            "config.yaml:9:28: providers.acme-rides.clients[0].allowServerTokens: allowServerTokens without `server: whole-fleet` in allow does nothing"
        ),
        (
            "        allow: { delivery-driver: any }\n        allowAllTasks: true",
            "config.yaml:9:24: providers.acme-rides.clients[0].allowAllTasks: allowAllTasks is for trusted-delivery-driver tokens"
        ),
        (
            "        allow: { consumer: everything }",
            "config.yaml:8:28: providers.acme-rides.clients[0].allow.consumer: expected 'any', 'whole-fleet' or { claim: NAME }"
        ),
    ])
    func refusesEveryBroaderGrantThanNamed(client: String, expected: String) {
        #expect(error(client).hasPrefix(expected), "\(error(client))")
    }

    @Test func grantsByNameAndWarnsAboutServerTokens() throws {
        let (configuration, file) = try parse(
            """
                    allow: { fleet-reader: whole-fleet, server: whole-fleet, trusted-delivery-driver: any }
                    allowServerTokens: true
                    allowAllTasks: true
            """)
        let client = try #require(configuration.providers[ProviderID("acme-rides")!]?.clients.first)
        #expect(client.allow == [.fleetReader: .wholeFleet, .server: .wholeFleet, .trustedDeliveryDriver: .anyContext])
        #expect(client.allowsAllTasks)
        let warnings = file.diagnostics.all.map(\.description)
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("Application Default Credentials") == true, "\(warnings)")
    }

    @Test func aSessionTokenClientNeverGetsServerTokens() throws {
        let jwks = FileManager.default.temporaryDirectory.appendingPathComponent("tokengate-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: jwks) }
        try Data(try JWKSet(keys: [JWSKey.generate(.es256, keyID: "k").publicKey()]).publicJSON()).write(to: URL(fileURLWithPath: jwks))
        do {
            let text = """
                providers:
                  acme-rides:
                    backend: { type: static-key }
                    clients:
                      - name: app
                        type: jwt
                        jwksFile: \(jwks)
                        issuer: https://id.test/
                        audience: tg
                        allow: { server: whole-fleet }
                        allowServerTokens: true
                """
            let file = ConfigFile(path: "config.yaml", environment: [:])
            do {
                _ = try ConfigurationParser().parse(ConfigNode.parse(Array(text.utf8), file: file))
                Issue.record("a jwt client was granted server tokens")
            } catch {
                #expect("\(error)".contains("allow.server: server tokens open the whole fleet and are never vended to a jwt client"), "\(error)")
            }
        }
    }
}
