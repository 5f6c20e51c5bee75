import Foundation
import Testing
import TokenGateCore

/// `sharedState:`: off unless configured; defaults; every mistake located at its line and key.
@Suite struct SharedStateSettingsTests {
    static let provider = ServerAndCORSSettingsTests.provider
    /// Base64 of 32 bytes.
    static let key = Data(repeating: 1, count: 32).base64EncodedString()

    private func parse(_ text: String, environment: [String: String] = [:]) throws -> GatewayConfiguration {
        try ConfigurationParser().parse(ConfigNode.parse(Array(text.utf8), file: ConfigFile(path: "config.yaml", environment: environment)))
    }

    private func error(_ text: String) -> String {
        do {
            _ = try parse(text + Self.provider)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func withoutASectionNothingIsShared() throws {
        #expect(try parse(Self.provider).sharedState == nil)
    }

    @Test func theSettingsAndTheirDefaultsAreRead() throws {
        let text = """
            sharedState:
              redis:
                url: rediss://cache.internal:6380/2
                username: tokengate
                password: ${REDIS_PASSWORD}
              encryptionKey: ${TOKENGATE_SHARED_KEY}
              replicas: 3

            """
        let settings = try #require(
            try parse(text + Self.provider, environment: ["REDIS_PASSWORD": "s3cret", "TOKENGATE_SHARED_KEY": Self.key]).sharedState)
        #expect(settings.redis.url == "rediss://cache.internal:6380/2")
        #expect(settings.redis.username == "tokengate")
        #expect(settings.redis.password == "s3cret")
        #expect(settings.redis.timeout == .milliseconds(250))
        #expect(settings.encryptionKey == [UInt8](repeating: 1, count: 32))
        #expect(settings.replicas == 3)
        #expect(settings.keyPrefix == "tokengate:")
        #expect(settings.lockTimeout == .seconds(10))
    }

    @Test func sentinelsReplaceTheURL() throws {
        let text = """
            sharedState:
              redis:
                sentinels: [10.0.0.5:26379, "[fd00::7]:26380"]
                primaryName: tokengate
                sentinelPassword: ${SENTINEL_PASSWORD}
                database: 3
                tls: true
                password: s3cret
              encryptionKey: \(Self.key)

            """
        let settings = try #require(try parse(text + Self.provider, environment: ["SENTINEL_PASSWORD": "watch"]).sharedState)
        let sentinel = try #require(settings.redis.sentinel)
        #expect(sentinel.hostsAndPorts.map { "\($0.host) \($0.port)" } == ["10.0.0.5 26379", "fd00::7 26380"])
        #expect(sentinel.primaryName == "tokengate" && sentinel.password == "watch" && sentinel.username == nil)
        #expect(sentinel.database == 3 && sentinel.tls)
        #expect(settings.redis.password == "s3cret")
        #expect(settings.redis.redactedURL == "the primary tokengate of the Sentinels 10.0.0.5:26379, [fd00::7]:26380")
    }

    @Test func aClusterIsGivenBySomeOfItsNodes() throws {
        let text = """
            sharedState:
              redis:
                cluster: [10.0.0.5:6379, "[fd00::7]:6380"]
                password: s3cret
              encryptionKey: \(Self.key)

            """
        let settings = try #require(try parse(text + Self.provider).sharedState)
        #expect(settings.redis.cluster == ["10.0.0.5:6379", "[fd00::7]:6380"])
        #expect(settings.redis.sentinel == nil && settings.redis.password == "s3cret")
        #expect(settings.redis.redactedURL == "the cluster of 10.0.0.5:6379, [fd00::7]:6380")
    }

    @Test(arguments: [
        ("sharedState:\n  encryptionKey: \(key)\n", "config.yaml:2:3: sharedState.redis: missing required key"),
        (
            "sharedState:\n  redis: { url: \"http://cache:6379\" }\n  encryptionKey: \(key)\n",
            "config.yaml:2:17: sharedState.redis.url: must start with redis:// or rediss:// (TLS), not http://"
        ),
        (
            "sharedState:\n  redis: { url: \"redis://cache:6379/x\" }\n  encryptionKey: \(key)\n",
            "config.yaml:2:17: sharedState.redis.url: has database \"x\"; it must be a number"
        ),
        (
            "sharedState:\n  redis: { url: \"redis://cache\" }\n  encryptionKey: c2hvcnQ=\n",
            "config.yaml:3:18: sharedState.encryptionKey: must be 32 bytes in base64 (make one with: openssl rand -base64 32)"
        ),
        (
            "sharedState:\n  redis: { url: \"redis://cache\" }\n  encryptionKey: \(key)\n  replicas: 0\n",
            "config.yaml:4:13: sharedState.replicas: must be between 1 and 1000"
        ),
        (
            "sharedState:\n  redis: { url: \"redis://cache\", caFile: ca.pem }\n  encryptionKey: \(key)\n",
            "config.yaml:2:34: sharedState.redis.caFile: is only used with a rediss:// URL"
        ),
        (
            "sharedState:\n  redis: { url: \"redis://cache\", sentinels: [\"s1:26379\"], primaryName: tg }\n  encryptionKey: \(key)\n",
            "config.yaml:2:34: sharedState.redis.sentinels: give one of url (one server), sentinels (the primary Sentinel names) or cluster (its nodes), not url and sentinels"
        ),
        (
            "sharedState:\n  redis: { cluster: [\"n1:6379\", \"n2\"] }\n  encryptionKey: \(key)\n",
            "config.yaml:2:33: sharedState.redis.cluster[1]: expected a cluster node as host:port (6379 is its usual port), got 'n2'"
        ),
        (
            "sharedState:\n  redis: { cluster: [\"n1:6379\"], primaryName: tg }\n  encryptionKey: \(key)\n",
            "config.yaml:2:34: sharedState.redis.primaryName: is only used with sentinels"
        ),
        (
            "sharedState:\n  redis: { sentinels: [\"s1:26379\", \"s2\"], primaryName: tg }\n  encryptionKey: \(key)\n",
            "config.yaml:2:36: sharedState.redis.sentinels[1]: expected a Sentinel as host:port (26379 is its usual port), got 's2'"
        ),
        (
            "sharedState:\n  redis: { sentinels: [\"s1:26379\"] }\n  encryptionKey: \(key)\n",
            "config.yaml:2:10: sharedState.redis.primaryName: missing required key"
        ),
        (
            "sharedState:\n  redis: { url: \"redis://cache\", primaryName: tg }\n  encryptionKey: \(key)\n",
            "config.yaml:2:34: sharedState.redis.primaryName: is only used with sentinels"
        ),
        (
            "sharedState:\n  redis: { url: \"redis://cache/1\", database: 2 }\n  encryptionKey: \(key)\n",
            "config.yaml:2:36: sharedState.redis.database: is only used with sentinels; a URL names its database (redis://host:6379/2)"
        ),
        (
            "sharedState:\n  redis: { sentinels: [\"s1:26379\"], primaryName: tg, database: -1 }\n  encryptionKey: \(key)\n",
            "config.yaml:2:64: sharedState.redis.database: must be between 0 and 15999"
        ),
        (
            "sharedState:\n  redis: { url: \"redis://cache\", tls: true }\n  encryptionKey: \(key)\n",
            "config.yaml:2:34: sharedState.redis.tls: is only used with sentinels; a URL asks for TLS with rediss://"
        ),
        (
            "sharedState:\n  redis: { sentinels: [\"s1:26379\"], primaryName: tg, caFile: ca.pem }\n  encryptionKey: \(key)\n",
            "config.yaml:2:54: sharedState.redis.caFile: is only used with tls: true"
        ),
        (
            "sharedState:\n  redis: { url: \"redis://cache\" }\n  encryptionKey: \(key)\n  cache: yes\n",
            "config.yaml:4:3: sharedState.cache: unknown key; expected one of: encryptionKey, keyPrefix, lockTimeout, redis, replicas, resyncInterval, uncheckedContexts"
        ),
    ])
    func mistakesAreLocated(text: String, expected: String) {
        #expect(error(text) == expected)
    }
}
