import Foundation
import JOSE
import Logging
import OpenSSLPrimitives
import TokenGateCore
import TokenGateTesting

/// Gateway replicas on one real `redis-server` (127.0.0.1, an ephemeral port), one configuration and one set of
/// key files, as several instances behind a load balancer. Each replica has its own backend probe, so a test can
/// count mints per replica and in total.
struct ScaleOutFixture {
    static let apiKey = "acme-backend-key-0123456789"
    static let otherKey = "other-fleet-key-0123456789"
    static let adminKey = "global-admin-key-0123456789"
    /// The sealing key, base64 of 32 bytes (the tests plant values sealed with it).
    static let encryptionKey = [UInt8](repeating: 7, count: 32)

    let directory: TemporaryDirectory
    let clock = ManualClock()
    let probes: [BackendProbe]

    init(replicas: Int) throws {
        directory = try TemporaryDirectory()
        probes = (0..<replicas).map { _ in BackendProbe() }
    }

    /// config.yaml for a Redis on `redisPort`: `rateLimits` is acme-rides' section, `sharedStateExtra` more lines of
    /// `sharedState:` (indented two spaces), `providerExtra` more lines of acme-rides (indented four), `topLevel` more
    /// sections at the top.
    func writeConfig(
        redisPort: Int, replicas: Int, rateLimits: String, sharedStateExtra: String, providerExtra: String = "", topLevel: String = "",
        cacheEntries: Int = 1000, redis: String? = nil
    ) throws {
        let digest = { (key: String) in HexBytes.encode(try Digest.sha256(Array(key.utf8))) }
        try directory.write(
            "config.yaml",
            """
            \(topLevel)
            adminKeys:
              - { name: ops, keySha256: \(try digest(Self.adminKey)) }
            sharedState:
              # Generous for a loaded test machine: these tests are about a healthy Redis (the outage test stops it).
              redis: \(redis ?? "{ url: \"redis://127.0.0.1:\(redisPort)/0\", timeout: 2s }")
              encryptionKey: \(Data(Self.encryptionKey).base64EncodedString())
              replicas: \(replicas)
              resyncInterval: 500ms
            \(sharedStateExtra)
            providers:
              acme-rides:
                cache: { minRemaining: 5m, refreshBefore: 10m, maxEntries: \(cacheEntries) }
                rateLimits: \(rateLimits)
                backend:
                  type: static-key
                  keys:
                    consumer: [{ serviceAccountFile: keys/consumer.json, generateIfMissing: true }]
                    driver: [{ serviceAccountFile: keys/driver.json, generateIfMissing: true }]
                clients:
                  - { name: dispatch, type: api-key, keySha256: \(try digest(Self.apiKey)), allow: { consumer: any, driver: any } }
            \(providerExtra)
              other-fleet:
                backend:
                  type: static-key
                  keys:
                    consumer: [{ serviceAccountFile: keys/other.json, generateIfMissing: true }]
                clients:
                  - { name: other, type: api-key, keySha256: \(try digest(Self.otherKey)), allow: { consumer: any } }
            """)
    }

    var configPath: String { "\(directory.path)/config.yaml" }

    /// Starts Redis and the replicas (one after the other: the first generates the key files the others load),
    /// runs `body`, stops everything.
    static func with<Result: Sendable>(
        replicas: Int = 3, rateLimits: String = "{}", sharedStateExtra: String = "", providerExtra: String = "", topLevel: String = "",
        cacheEntries: Int = 1000, jwksFetcher: (any JWKSFetcher)? = nil, logs: LogRecorder? = nil,
        _ body: (ScaleOutFixture, RedisServer, [RunningGateway]) async throws -> Result
    ) async throws -> Result {
        let fixture = try ScaleOutFixture(replicas: replicas)
        defer { fixture.directory.remove() }
        return try await RedisServer.with { redis in
            try fixture.writeConfig(
                redisPort: redis.port, replicas: replicas, rateLimits: rateLimits, sharedStateExtra: sharedStateExtra,
                providerExtra: providerExtra, topLevel: topLevel, cacheEntries: cacheEntries)
            return try await fixture.start(0, of: replicas, logs: logs, jwksFetcher: jwksFetcher, running: []) { gateways in
                try await body(fixture, redis, gateways)
            }
        }
    }

    /// ``with(replicas:rateLimits:sharedStateExtra:providerExtra:jwksFetcher:logs:_:)`` on a primary, its replica
    /// and three Sentinels instead of one Redis: the replicas find the primary through the Sentinels.
    static func withSentinels<Result: Sendable>(
        replicas: Int = 2, database: Int = 0, tls: TestCertificates? = nil, sharedStateExtra: String = "", logs: LogRecorder? = nil,
        _ body: (ScaleOutFixture, RedisSentinelGroup, [RunningGateway]) async throws -> Result
    ) async throws -> Result {
        let fixture = try ScaleOutFixture(replicas: replicas)
        defer { fixture.directory.remove() }
        return try await RedisSentinelGroup.with(tls: tls) { group in
            let tlsSettings = tls.map { ", tls: true, caFile: \($0.caCertificate)" } ?? ""
            try fixture.writeConfig(
                redisPort: 0, replicas: replicas, rateLimits: "{}", sharedStateExtra: sharedStateExtra,
                redis: """
                    { sentinels: [\(group.sentinelAddresses)], primaryName: \(RedisSentinelGroup.primaryName), database: \(database), \
                    timeout: 2s\(tlsSettings) }
                    """)
            return try await fixture.start(0, of: replicas, logs: logs, jwksFetcher: nil, running: []) { gateways in
                try await body(fixture, group, gateways)
            }
        }
    }

    /// ``with(replicas:rateLimits:sharedStateExtra:providerExtra:jwksFetcher:logs:_:)`` on a Redis Cluster of three
    /// primaries and three replicas: the replicas are given two of its nodes.
    static func withCluster<Result: Sendable>(
        replicas: Int = 3, rateLimits: String = "{}",
        _ body: (ScaleOutFixture, RedisClusterGroup, [RunningGateway]) async throws -> Result
    ) async throws -> Result {
        let fixture = try ScaleOutFixture(replicas: replicas)
        defer { fixture.directory.remove() }
        return try await RedisClusterGroup.with { cluster in
            try fixture.writeConfig(
                redisPort: 0, replicas: replicas, rateLimits: rateLimits, sharedStateExtra: "",
                redis: "{ cluster: [\(cluster.addresses.prefix(2).joined(separator: ", "))], timeout: 2s }")
            return try await fixture.start(0, of: replicas, logs: nil, jwksFetcher: nil, running: []) { gateways in
                try await body(fixture, cluster, gateways)
            }
        }
    }

    private func start<Result: Sendable>(
        _ index: Int, of count: Int, logs: LogRecorder?, jwksFetcher: (any JWKSFetcher)?, running: [RunningGateway],
        _ body: ([RunningGateway]) async throws -> Result
    ) async throws -> Result {
        guard index < count else { return try await body(running) }
        return try await RunningGateway.with(
            configuration: configPath,
            registry: BackendRegistry([ProbedFactory(probe: probes[index])]),
            clock: clock.gatewayClock,
            logger: logs?.logger ?? Logger(label: "replica-\(index)", factory: { _ in SwiftLogNoOpLogHandler() }),
            jwksFetcher: jwksFetcher
        ) { gateway in
            try await start(index + 1, of: count, logs: logs, jwksFetcher: jwksFetcher, running: running + [gateway], body)
        }
    }

    /// Backend calls at every replica together.
    var totalBackendCalls: Int { probes.reduce(0) { $0 + $1.calls } }

    /// Backend calls for `trip` at every replica together: exact while other trips are minted alongside.
    func backendCalls(forTrip trip: String) -> Int { probes.reduce(0) { $0 + $1.calls(for: .trip(ContextID(trip)!)) } }
}

extension RunningGateway {
    /// A consumer token request for `trip` at this replica.
    func consumerToken(_ trip: String, provider: String = "acme-rides", key: String = ScaleOutFixture.apiKey) async throws -> GatewayResponse {
        try await get("/v1/providers/\(provider)/tokens/consumer?tripId=\(trip)", bearer: key)
    }

    /// This replica's metrics.
    func scrape() async throws -> MetricsScrape { MetricsScrape(try await metrics()) }
}

extension GatewayResponse {
    /// The token of a token answer.
    var token: String? { json["token"]?.stringValue }
}
