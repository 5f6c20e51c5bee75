import JOSE
import Logging
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

@Suite struct AuthSessionJWKSConfigTests {
    static let prefix = """
        providers:
          acme-rides:
            backend: { type: inert }
            clients:
              - name: app
                type: jwt

        """
    static let rest = "        issuer: https://id.test/\n        audience: tg\n        allow: { consumer: { claim: trips } }\n"

    private func parse(_ text: String) throws -> GatewayConfiguration {
        let file = ConfigFile(path: "config.yaml", environment: ["IDP_HOST": "login.acme.test"])
        return try ConfigurationParser().parse(ConfigNode.parse(Array(text.utf8), file: file))
    }

    private func error(_ lines: String) -> String {
        do {
            _ = try parse(Self.prefix + lines + Self.rest)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    private func settings(_ lines: String) throws -> SessionTokenSettings {
        let configuration = try parse(Self.prefix + lines + Self.rest)
        let client = try #require(configuration.providers.values.first?.clients.first)
        guard case .jwt(let settings) = client.credential else { throw ConditionNeverHeld() }
        return settings
    }

    private func url(_ settings: SessionTokenSettings) throws -> JWKSURL {
        guard case .url(let url) = settings.keySource else { throw ConditionNeverHeld() }
        return url
    }

    /// Parsing yields a value, never a running key set: nothing is fetched until a generation runs.
    @Test func jwksUrlIsAValueWithAnHourlyRefreshByDefault() throws {
        let url = try url(try settings("        jwksUrl: https://${IDP_HOST}/.well-known/jwks.json\n"))
        #expect(url.url == "https://login.acme.test/.well-known/jwks.json")
        #expect(url.refreshInterval == .seconds(3600))
    }

    @Test func refreshIntervalIsHonouredAndLoopbackHTTPIsAllowed() throws {
        let url = try url(try settings("        jwksUrl: http://127.0.0.1:8081/jwks.json\n        refreshInterval: 5m\n"))
        #expect(url.refreshInterval == .seconds(300))
        #expect(url.url == "http://127.0.0.1:8081/jwks.json")
    }

    @Test(arguments: [
        (
            "        jwksFile: jwks.json\n        jwksUrl: https://id.test/jwks\n",
            "config.yaml:8:9: providers.acme-rides.clients[0].jwksUrl: give either jwksFile or jwksUrl, not both"
        ),
        (
            "",
            "config.yaml:5:9: providers.acme-rides.clients[0]: a jwt client needs the identity provider's keys: jwksFile or jwksUrl"
        ),
        (
            "        jwksUrl: not a url\n",
            "config.yaml:7:18: providers.acme-rides.clients[0].jwksUrl: expected the https:// URL of a JWKS, got 'not a url'"
        ),
        (
            "        jwksUrl: ftp://id.test/jwks\n",
            "config.yaml:7:18: providers.acme-rides.clients[0].jwksUrl: expected an https:// URL, got the scheme 'ftp'"
        ),
        (
            "        jwksUrl: http://id.test/jwks\n",
            "config.yaml:7:18: providers.acme-rides.clients[0].jwksUrl: plain http is allowed only to a loopback host; use https:// for 'id.test'"
        ),
        (
            "        jwksUrl: https://user:secret@id.test/jwks\n",
            "config.yaml:7:18: providers.acme-rides.clients[0].jwksUrl: the URL must not carry credentials"
        ),
        (
            "        jwksUrl: https://${IDP}/jwks\n",
            "config.yaml:7:18: providers.acme-rides.clients[0].jwksUrl: environment variable IDP is not set"
        ),
        (
            "        jwksUrl: https://id.test/jwks\n        refreshInterval: 5s\n",
            "config.yaml:8:26: providers.acme-rides.clients[0].refreshInterval: expected a refresh interval from 30s to 24h"
        ),
        (
            "        jwksUrl: https://id.test/jwks\n        refreshInterval: soon\n",
            "config.yaml:8:26: providers.acme-rides.clients[0].refreshInterval: expected a duration"
        ),
        (
            "        jwksFile: jwks.json\n        refreshInterval: 5m\n",
            "config.yaml:8:9: providers.acme-rides.clients[0].refreshInterval: only for a jwksUrl client"
        ),
    ])
    func brokenKeySourcesAreLocated(lines: String, expected: String) {
        let message = error(lines)
        #expect(message.hasPrefix(expected), "\(message)")
    }

    @Test func apiKeyClientsRefuseJWKSKeys() {
        let text = """
            providers:
              acme-rides:
                backend: { type: inert }
                clients:
                  - name: backend
                    type: api-key
                    keySha256: 9ae4a3e2a48a06ab46007841990560acb1408babd4b1965ebe237cfec90382b6
                    jwksUrl: https://id.test/jwks
                    allow: { consumer: any }
            """
        do {
            _ = try parse(text)
            Issue.record("an api-key client with a jwksUrl loaded")
        } catch {
            #expect("\(error)" == "config.yaml:8:18: providers.acme-rides.clients[0].jwksUrl: not allowed for a api-key client")
        }
    }

    @Test func assemblingFetchesNothingAndEveryJWKSURLGetsOneRefresher() async throws {
        let text =
            Self.prefix + "        jwksUrl: https://id.test/jwks\n" + Self.rest + """
                      - name: web
                        type: jwt
                        jwksUrl: https://id.test/web-jwks
                        issuer: https://id.test/
                        audience: web
                        allow: { consumer: { claim: trips } }

                """
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let fetcher = ScriptedJWKSFetcher(.failure("never called"))
        let assembler = GatewayAssembler(
            registry: BackendRegistry([InertBackendFactory()]), environment: [:], clock: ManualClock(wallSeconds: 1_700_000_000).gatewayClock,
            logger: logger, jwksFetcher: fetcher)
        let generation = try await assembler.build(bytes: Array(text.utf8), file: ConfigFile(path: "config.yaml", environment: [:]))
        #expect(generation.keySets.keySets.keys.sorted() == ["https://id.test/jwks", "https://id.test/web-jwks"])
        #expect(generation.keySets.refreshers.count == 2)
        #expect(generation.services.count == 2)
        #expect(fetcher.count == 0)
    }
}

/// A backend that is never asked for anything: configuration tests need one to load.
struct InertBackendFactory: TokenBackendFactory {
    var type: String { "inert" }

    func makeBackend(_ context: BackendContext) async throws -> any TokenBackend { InertBackend() }

    struct InertBackend: TokenBackend {
        var tokenTypes: Set<TokenType> { [.consumer] }
        func issue(_ request: TokenRequest) async throws -> IssuedToken { throw ConditionNeverHeld() }
        var verificationKeys: [BoundKeySource] { [] }
    }
}
