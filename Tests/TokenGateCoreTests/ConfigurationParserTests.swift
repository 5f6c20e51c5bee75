import Foundation
import Testing

@testable import TokenGateCore

@Suite struct ConfigurationParserTests {
    static let valid = """
        server:
          host: 127.0.0.1
          port: 9090
        defaults:
          cache: { minRemaining: 4m, refreshBefore: 12m, maxEntries: 50 }
          rateLimits:
            caller: { rate: 600/min, burst: 50 }
        providers:
          acme-rides:
            audience: https://example.test/
            backend:
              type: static-key
              anything: the plugin validates this
            clients:
              - name: backend
                type: api-key
                keySha256: 9ae4a3e2a48a06ab46007841990560acb1408babd4b1965ebe237cfec90382b6
                allow: { consumer: any, server: whole-fleet }
                allowServerTokens: true
            response: { tokenKey: jwt, expiryKey: expirationTimestamp, expiryFormat: epoch-milliseconds }
        """

    private func parse(_ text: String, environment: [String: String] = [:]) throws -> GatewayConfiguration {
        let file = ConfigFile(path: "config.yaml", environment: environment)
        return try ConfigurationParser().parse(ConfigNode.parse(Array(text.utf8), file: file))
    }

    private func error(_ text: String, environment: [String: String] = [:]) -> String {
        do {
            _ = try parse(text, environment: environment)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func readsEverySectionWithDefaultsAndOverrides() throws {
        let configuration = try parse(Self.valid)
        #expect(configuration.server.port == 9090)
        let provider = try #require(configuration.providers[ProviderID("acme-rides")!])
        #expect(provider.audience == "https://example.test/")
        #expect(provider.cache.minRemaining == .seconds(240))
        #expect(provider.cache.refreshBefore == .seconds(720))
        #expect(provider.cache.maxEntries == 50)
        #expect(provider.rateLimits.caller != nil)
        #expect(provider.rateLimits.provider == nil)
        #expect(provider.backendType == "static-key")
        #expect(provider.response == ResponseMapping(tokenKey: "jwt", expiryKey: "expirationTimestamp", expiryFormat: .epochMilliseconds))
        #expect(provider.clients.first?.allow == [.consumer: .anyContext, .server: .wholeFleet])
    }

    @Test func aLimitInShadowModeIsReadAsOne() throws {
        let text = Self.valid.replacingOccurrences(
            of: "caller: { rate: 600/min, burst: 50 }", with: "caller: { rate: 600/min, burst: 50, shadow: true }")
        let provider = try #require(try parse(text).providers[ProviderID("acme-rides")!])
        #expect(provider.rateLimits.caller == RateLimit(count: 600, per: .seconds(60), burst: 50, shadow: true))
        #expect(provider.rateLimits.caller?.description == "600/min burst 50 shadow")
        let wrong = Self.valid.replacingOccurrences(of: "caller: { rate: 600/min, burst: 50 }", with: "caller: { rate: 600/min, shadow: maybe }")
        #expect(error(wrong) == "config.yaml:7:38: defaults.rateLimits.caller.shadow: expected true or false, got 'maybe'")
    }

    @Test func aDistinctContextsCapIsReadAndAMalformedOneIsALocatedError() throws {
        func with(_ section: String) -> String {
            Self.valid.replacingOccurrences(of: "caller: { rate: 600/min, burst: 50 }", with: "distinctContexts: \(section)")
        }
        let provider = try #require(try parse(with("{ perCaller: 200/h, perType: { consumer: 50/min } }")).providers[ProviderID("acme-rides")!])
        let limits = try #require(provider.rateLimits.distinctContexts)
        #expect(limits.perCaller == DistinctContextLimits.Cap(count: 200, windowSeconds: 3_600))
        #expect(limits.perType == [.consumer: DistinctContextLimits.Cap(count: 50, windowSeconds: 60)])
        #expect(limits.description == "perCaller 200/h, consumer 50/min")
        #expect(
            error(with("{ perCaller: 200/day }"))
                == "config.yaml:7:36: defaults.rateLimits.distinctContexts.perCaller: expected a number of contexts per window such as "
                + "200/h, 1000/min or 50/s (at most 1000000), got '200/day'")
        #expect(
            error(with("{ perType: { trips: 5/h } }"))
                .hasPrefix("config.yaml:7:36: defaults.rateLimits.distinctContexts.perType.trips: 'trips' is not a token type"))
        #expect(
            error(with("{ shadow: true }"))
                == "config.yaml:7:23: defaults.rateLimits.distinctContexts: distinctContexts needs perCaller or perType")
    }

    @Test func keyHealthIsReadWithItsDefaultsAndABadURLIsLocated() throws {
        func with(_ section: String) -> String {
            let audience = "    audience: https://example.test/\n"
            return Self.valid.replacingOccurrences(of: audience, with: audience + "    keyHealth: \(section)\n")
        }
        let defaults = try #require(try parse(Self.valid).providers[ProviderID("acme-rides")!]?.keyHealth)
        #expect(!defaults.checkPublished && defaults.expiryWarning == .seconds(30 * 86_400))
        #expect(defaults.publishedKeysURL == "https://www.googleapis.com/service_accounts/v1/jwk/{serviceAccount}")
        let configured = try parse(with("{ checkPublished: true, interval: 2h, expiryWarning: 240h }"))
        let set = try #require(configured.providers[ProviderID("acme-rides")!]?.keyHealth)
        #expect(set.checkPublished && set.interval == .seconds(7200) && set.expiryWarning == .seconds(864_000))
        #expect(
            error(with(#"{ publishedKeysUrl: "http://keys.example/jwk/{serviceAccount}" }"#))
                == "config.yaml:11:36: providers.acme-rides.keyHealth.publishedKeysUrl: plain http is allowed only to a loopback host; "
                + "use https:// for 'keys.example'")
        #expect(
            error(with(#"{ publishedKeysUrl: "https://keys.example/jwk" }"#))
                == "config.yaml:11:36: providers.acme-rides.keyHealth.publishedKeysUrl: the URL must name the account once, "
                + "as {serviceAccount}, e.g. https://www.googleapis.com/service_accounts/v1/jwk/{serviceAccount}")
    }

    @Test(arguments: [
        ("2027-01-15", Int64(1_800_000_000 - 8 * 3600)), ("2027-01-15T08:00:00Z", 1_800_000_000), ("2024-02-29", 1_709_164_800),
        ("1970-01-01T00:00:00Z", 0),
    ])
    func datesAreReadAsUTC(text: String, seconds: Int64) {
        #expect(RFC3339.parse(text) == seconds)
        #expect(RFC3339.format(seconds).hasPrefix(text))
    }

    @Test(arguments: ["2027-02-29", "2027-13-01", "2027-1-15", "2027-01-15T08:00:00+01:00", "2027-01-15 08:00:00Z", "15/01/2027", ""])
    func malformedDatesAreRefused(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }

    /// `maxConcurrentCalls`, `queueTimeout` and `circuitBreaker` are the core's keys of `backend:`: read by it, and
    /// taken out of the section the plugin validates.
    @Test func theBackendGuardKeysAreTheCoresAndThePluginNeverSeesThem() throws {
        let text = Self.valid.replacingOccurrences(
            of: "      anything: the plugin validates this\n",
            with: "      maxConcurrentCalls: 8\n      queueTimeout: 250ms\n      circuitBreaker: { consecutiveFailures: 3, openFor: 2s }\n")
        let provider = try #require(try parse(text).providers[ProviderID("acme-rides")!])
        #expect(provider.backendGuard.maxConcurrentCalls == 8)
        #expect(provider.backendGuard.queueTimeout == .milliseconds(250))
        #expect(provider.backendGuard.circuitBreaker?.consecutiveFailures == 3)
        #expect(provider.backendGuard.circuitBreaker?.openFor == .seconds(2))
        #expect(provider.backendGuard.circuitBreaker?.failureRatio == 0.5)
        #expect(try provider.backendSection.entries().map(\.key) == ["type"])

        let defaults = try #require(try parse(Self.valid).providers[ProviderID("acme-rides")!])
        #expect(defaults.backendGuard == BackendGuardSettings())
        let off = Self.valid.replacingOccurrences(of: "      anything: the plugin validates this\n", with: "      circuitBreaker: off\n")
        #expect(try parse(off).providers[ProviderID("acme-rides")!]?.backendGuard.circuitBreaker == nil)
    }

    @Test(arguments: [
        ("maxConcurrentCalls: 0", "config.yaml:13:27: providers.acme-rides.backend.maxConcurrentCalls: must be between 1 and 10000"),
        ("queueTimeout: 2m", "config.yaml:13:21: providers.acme-rides.backend.queueTimeout: must be at most 30s"),
        ("circuitBreaker: on", "config.yaml:13:23: providers.acme-rides.backend.circuitBreaker: expected off or a mapping"),
        (
            "circuitBreaker: { failureRatio: 1.5 }",
            "config.yaml:13:39: providers.acme-rides.backend.circuitBreaker.failureRatio: expected a ratio above 0"
        ),
        (
            "circuitBreaker: { openFor: 50ms }",
            "config.yaml:13:34: providers.acme-rides.backend.circuitBreaker.openFor: must be between 100ms and 10m"
        ),
        ("circuitBreaker: { opensAfter: 5 }", "config.yaml:13:25: providers.acme-rides.backend.circuitBreaker.opensAfter: unknown key"),
    ])
    func aBrokenGuardSettingIsLocated(line: String, expected: String) {
        let message = error(Self.valid.replacingOccurrences(of: "anything: the plugin validates this", with: line))
        #expect(message.hasPrefix(expected), "\(message)")
    }

    @Test(arguments: [
        (
            "server:\n  port: \"8080\"\nproviders: {}\n",
            #"config.yaml:2:9: server.port: expected an integer, got the quoted string "8080""#
        ),
        (
            "server:\n  prot: 8080\nproviders: {}\n",
            "config.yaml:2:3: server.prot: unknown key; expected one of: admin, eventLoops, fastPath, host, idleTimeout, listenBacklog, logBudget, logFormat, logLevel, maxConnections, port, proxyProtocol, readTimeout, readiness, tls, trustedProxies"
        ),
        (
            "providers:\n  Acme: {}\n",
            "config.yaml:2:3: providers.Acme: 'Acme' is not a Google Cloud project ID (6-30 lower-case letters, digits and hyphens, starting with a letter)"
        ),
        (
            "server: {}\n",
            "config.yaml:1:1: providers: missing required key"
        ),
        (
            "providers:\n  acme-rides:\n    backend: { type: static-key }\n    clients: []\n",
            "config.yaml:4:14: providers.acme-rides.clients: declare at least one client: TokenGate never vends tokens anonymously"
        ),
        (
            "defaults:\n  leeway: 5 minutes\nproviders: {}\n",
            "config.yaml:2:11: defaults.leeway: expected a duration such as 90s, 5m or 1h, got '5 minutes'"
        ),
        (
            "a: 1\na: 2\n",
            "config.yaml:2:1: duplicate key 'a'"
        ),
    ])
    func reportsFileLineColumnAndKeyPath(text: String, expected: String) {
        #expect(error(text).hasPrefix(expected), "\(error(text))")
    }

    static let clientPrefix = """
        providers:
          acme-rides:
            backend: { type: static-key }
            clients:
              - name: app

        """

    @Test(arguments: [
        (
            "        type: jwt\n        jwksFile: /nonexistent/jwks.json\n        issuer: https://id.test/\n        audience: tg\n        allow: { consumer: { claim: trips } }\n",
            "config.yaml:7:19: providers.acme-rides.clients[0].jwksFile: no such file: /nonexistent/jwks.json"
        ),
        (
            "        type: api-key\n        keySha256: abc\n        allow: { consumer: any }\n",
            "config.yaml:7:20: providers.acme-rides.clients[0].keySha256: expected the 64 hex characters"
        ),
        (
            "        type: api-key\n        keySha256: ${DEMO_KEY_DIGEST}\n        allow: { consumer: any }\n",
            "config.yaml:7:20: providers.acme-rides.clients[0].keySha256: environment variable DEMO_KEY_DIGEST is not set"
        ),
        (
            "        type: api-key\n        keySha256: 9ae4a3e2a48a06ab46007841990560acb1408babd4b1965ebe237cfec90382b6\n        allow: { consumer: { claim: trips } }\n",
            "config.yaml:8:28: providers.acme-rides.clients[0].allow.consumer: an api-key client has no claims; use 'any'"
        ),
        (
            "        type: api-key\n        keySha256: 9ae4a3e2a48a06ab46007841990560acb1408babd4b1965ebe237cfec90382b6\n        allow: { taxi: any }\n",
            "config.yaml:8:18: providers.acme-rides.clients[0].allow.taxi: unknown token type"
        ),
        (
            "        type: password\n        allow: { consumer: any }\n",
            "config.yaml:6:15: providers.acme-rides.clients[0].type: unknown client type 'password'"
        ),
    ])
    func rejectsUnsafeOrBrokenClients(text: String, expected: String) {
        let message = error(Self.clientPrefix + text)
        #expect(message.hasPrefix(expected), "\(message)")
    }

    @Test func interpolatesSecretsFromTheEnvironment() throws {
        let text = Self.clientPrefix + "        type: api-key\n        keySha256: ${DIGEST}\n        allow: { driver: any }\n"
        let digest = String(repeating: "ab", count: 32)
        let configuration = try parse(text, environment: ["DIGEST": digest])
        let client = try #require(configuration.providers.values.first?.clients.first)
        guard case .apiKey(let sha256) = client.credential else {
            Issue.record("not an api-key client")
            return
        }
        #expect(sha256 == [UInt8](repeating: 0xAB, count: 32))
    }

    @Test func refusesWildcardServerTokensForSessionTokenClients() throws {
        let text =
            Self.clientPrefix
            + "        type: jwt\n        jwksFile: x.json\n        issuer: i\n        audience: a\n        allow: { server: { claim: x } }\n"
        // The JWKS file is checked first; the policy error needs a readable one.
        #expect(error(text).contains("jwksFile"))
    }
}
