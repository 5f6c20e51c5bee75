import Testing
import TokenGateCore

/// `server:` connection settings and a provider's `cors:`: defaults, values, and located errors.
@Suite struct ServerAndCORSSettingsTests {
    static let provider = """
        providers:
          acme-rides:
            backend: { type: static-key }
            clients:
              - { name: app, type: api-key, keySha256: 9ae4a3e2a48a06ab46007841990560acb1408babd4b1965ebe237cfec90382b6, allow: { consumer: any } }

        """

    private func parse(_ text: String) throws -> GatewayConfiguration {
        try ConfigurationParser().parse(ConfigNode.parse(Array(text.utf8), file: ConfigFile(path: "config.yaml", environment: [:])))
    }

    private func error(_ text: String) -> String {
        do {
            _ = try parse(text)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func serverSettingsHaveDefaults() throws {
        let server = try parse(Self.provider).server
        #expect(server.maxConnections == 10_000)
        #expect(server.listenBacklog == 65535)
        #expect(server.idleTimeout == .seconds(60))
        #expect(server.readTimeout == .seconds(10))
        #expect(server.fastPath)
        #expect(server.eventLoops == nil)
    }

    @Test func serverSettingsAreRead() throws {
        let text =
            "server:\n  maxConnections: 500\n  listenBacklog: 4096\n  idleTimeout: 2m\n  readTimeout: 250ms\n  fastPath: false\n  eventLoops: 3\n"
            + Self.provider
        let server = try parse(text).server
        #expect(server.maxConnections == 500)
        #expect(server.listenBacklog == 4096)
        #expect(server.idleTimeout == .seconds(120))
        #expect(server.readTimeout == .milliseconds(250))
        #expect(!server.fastPath)
        #expect(server.eventLoops == 3)
    }

    @Test(arguments: [
        ("server:\n  listenBacklog: 0\n", "config.yaml:2:18: server.listenBacklog: must be between 1 and 65535"),
        ("server:\n  listenBacklog: \"1024\"\n", #"config.yaml:2:18: server.listenBacklog: expected an integer, got the quoted string "1024""#),
        ("server:\n  maxConnections: 0\n", "config.yaml:2:19: server.maxConnections: must be between 1 and 1000000"),
        ("server:\n  idleTimeout: 0s\n", "config.yaml:2:16: server.idleTimeout: must be between 1s and 1h"),
        ("server:\n  readTimeout: 10m\n", "config.yaml:2:16: server.readTimeout: must be between 100ms and 5m"),
        ("server:\n  readTimeout: soon\n", "config.yaml:2:16: server.readTimeout: expected a duration such as 90s, 5m or 1h, got 'soon'"),
        ("server:\n  fastPath: yes\n", "config.yaml:2:13: server.fastPath: expected true or false, got 'yes'"),
        ("server:\n  eventLoops: 0\n", "config.yaml:2:15: server.eventLoops: must be between 1 and 1024"),
    ])
    func badServerSettingsAreLocated(server: String, expected: String) {
        #expect(error(server + Self.provider) == expected)
    }

    @Test func trustedProxiesAreReadInEitherForm() throws {
        let listed = try parse("server:\n  trustedProxies: [10.0.0.0/8, \"::1\"]\n  proxyProtocol: v2\n" + Self.provider).server
        #expect(listed.trustedProxies?.networks.map(\.description) == ["10.0.0.0/8", "0:0:0:0:0:0:0:1/128"])
        #expect(listed.trustedProxies?.hops == 1)
        #expect(listed.trustedProxies?.header == .xForwardedFor)
        #expect(listed.proxyProtocol == .v2)
        let mapped = try parse(
            "server:\n  trustedProxies:\n    networks: [35.191.0.0/16]\n    hops: 2\n    header: Forwarded\n  proxyProtocol: off\n"
                + Self.provider
        ).server
        #expect(mapped.trustedProxies == TrustedProxies(networks: [IPNetwork(parsing: "35.191.0.0/16")!], hops: 2, header: .forwarded))
        #expect(mapped.proxyProtocol == nil)
        #expect(try parse(Self.provider).server.trustedProxies == nil)
    }

    @Test(arguments: [
        (
            "server:\n  trustedProxies: [10.1.2.3/8]\n",
            "config.yaml:2:20: server.trustedProxies[0]: expected an address or CIDR block such as 10.0.0.0/8 or 2001:db8::/32 (host bits zero), got '10.1.2.3/8'"
        ),
        (
            "server:\n  trustedProxies: [0.0.0.0/0]\n",
            "config.yaml:2:19: server.trustedProxies: 0.0.0.0/0 or ::/0 would let any client choose its own address"
        ),
        (
            "server:\n  trustedProxies: []\n",
            "config.yaml:2:19: server.trustedProxies: list at least one address or CIDR block (remove trustedProxies to trust no proxy)"
        ),
        (
            "server:\n  trustedProxies: { networks: [10.0.0.0/8], hops: 0 }\n",
            "config.yaml:2:51: server.trustedProxies.hops: must be between 1 and 16"
        ),
        (
            "server:\n  trustedProxies: { networks: [10.0.0.0/8], header: x-real-ip }\n",
            "config.yaml:2:53: server.trustedProxies.header: must be x-forwarded-for or forwarded, got 'x-real-ip'"
        ),
        (
            "server:\n  proxyProtocol: v2\n",
            "config.yaml:2:18: server.proxyProtocol: needs server.trustedProxies: a PROXY header is believed only from a trusted proxy"
        ),
        ("server:\n  trustedProxies: [10.0.0.0/8]\n  proxyProtocol: v3\n", "config.yaml:3:18: server.proxyProtocol: must be off, v1 or v2, got 'v3'"),
    ])
    func badProxySettingsAreLocated(server: String, expected: String) {
        #expect(error(server + Self.provider) == expected)
    }

    @Test func aListenerBeyondLoopbackWithAPerPeerLimitAndNoTrustedProxiesIsWarnedAbout() throws {
        func warnings(_ server: String) throws -> [String] {
            let file = ConfigFile(path: "config.yaml", environment: [:])
            _ = try ConfigurationParser().parse(ConfigNode.parse(Array((server + Self.provider).utf8), file: file))
            return file.diagnostics.all.map(\.description)
        }
        let warned = try warnings("server:\n  host: 0.0.0.0\n")
        #expect(warned.count == 1)
        #expect(
            warned.first?.hasPrefix("config.yaml:2:9: server.host: the listener is not on loopback and failedAuthPerPeer is on (acme-rides)") == true)
        #expect(warned.first?.contains("list the proxies in server.trustedProxies") == true)
        #expect(try warnings("server:\n  host: 0.0.0.0\n  trustedProxies: [10.0.0.0/8]\n").isEmpty)
        #expect(try warnings("server:\n  host: 127.0.0.2\n").isEmpty)
        #expect(try warnings("server:\n  host: \"::1\"\n").isEmpty)
    }

    static func withCORS(_ cors: String) -> String { Self.provider + "    cors: \(cors)\n" }

    @Test func corsOriginsAreReadAsBrowsersSendThem() throws {
        let text = Self.withCORS(
            "{ allowedOrigins: [HTTPS://Ops.Acme.Example:443, 'https://ops.acme.example:8443', http://localhost:3000, http://127.0.0.1], maxAge: 1h }"
        )
        let cors = try #require(try parse(text).providers[ProviderID("acme-rides")!]?.cors)
        #expect(cors.allowedOrigins == ["https://ops.acme.example", "https://ops.acme.example:8443", "http://localhost:3000", "http://127.0.0.1"])
        #expect(cors.maxAgeSeconds == 3600)
        #expect(cors.allows("https://ops.acme.example"))
        #expect(!cors.allows("https://OPS.acme.example") && !cors.allows("https://ops.acme.example/") && !cors.allows("null"))
        #expect(try parse(Self.withCORS("{ allowedOrigins: [https://a.example] }")).providers.first?.value.cors?.maxAgeSeconds == 600)
        #expect(try parse(Self.provider).providers.first?.value.cors == nil)
    }

    @Test(arguments: [
        ("'*'", "a wildcard origin is never allowed"),
        ("'https://*.acme.example'", "a wildcard origin is never allowed"),
        ("https://ops.acme.example/", "'/' starts a path"),
        ("https://ops.acme.example/app", "'/' starts a path"),
        ("https://user@ops.acme.example", "'@' starts"),
        ("http://ops.acme.example", "plain http is allowed for localhost and 127.0.0.1 only"),
        ("ftp://ops.acme.example", "the scheme must be https"),
        ("ops.acme.example", "expected an origin such as https://"),
        ("https://ops.acme.example:99999", "the port must be a number from 1 to 65535"),
        ("https://ops..example", "is not a host name or IPv4 address"),
        ("'http://[::1]:3000'", "IPv6 literals are not supported"),
        ("null", "expected a string, got nothing"),
    ])
    func aBadOriginIsRefusedWhereItIsWritten(origin: String, message: String) {
        let text = Self.withCORS("{ allowedOrigins: [https://fine.example, \(origin)] }")
        let reported = error(text)
        #expect(reported.hasPrefix("config.yaml:6:52: providers.acme-rides.cors.allowedOrigins[1]: "), "\(reported)")
        #expect(reported.contains(message), "\(reported)")
    }

    @Test(arguments: [
        ("{ allowedOrigins: [] }", "config.yaml:6:29: providers.acme-rides.cors.allowedOrigins: list at least one origin"),
        (
            "{ allowedOrigins: [https://a.example, HTTPS://A.example] }",
            "config.yaml:6:49: providers.acme-rides.cors.allowedOrigins[1]: https://a.example is already listed"
        ),
        ("{ allowedOrigins: [https://a.example], maxAge: 2d }", "config.yaml:6:58: providers.acme-rides.cors.maxAge: expected a duration"),
        ("{ allowedOrigins: [https://a.example], maxAge: 25h }", "config.yaml:6:58: providers.acme-rides.cors.maxAge: must be between 0s and 24h"),
        ("{ origins: [https://a.example] }", "config.yaml:6:13: providers.acme-rides.cors.origins: unknown key"),
    ])
    func badCORSSettingsAreLocated(cors: String, expected: String) {
        let reported = error(Self.withCORS(cors))
        #expect(reported.hasPrefix(expected), "\(reported)")
    }
}
