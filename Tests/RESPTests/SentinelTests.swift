import Foundation
import RESP
import RESPTesting
import Testing

/// Following Redis Sentinel: the client asks the Sentinels for the primary before each connection, and drops a
/// connection whose server answers a write with `READONLY` (a primary demoted to a replica).
@Suite(.timeLimit(.minutes(2)))
struct SentinelTests {
    @Test func aConnectionAnsweredReadonlyIsDroppedNotReused() async throws {
        try await RedisServer.with { primary in
            try await RedisServer.with(RedisServer.Options(replicaOf: primary.port)) { replica in
                try await replica.withClient({ $0.maxConnections = 1 }) { client in
                    let before = try await client.send(["CLIENT", "ID"]).integer
                    await #expect(throws: RESPError.self) { try await client.send(["SET", "k", "v"]) }
                    let after = try await client.send(["CLIENT", "ID"]).integer
                    #expect(before != nil && after != nil && before != after, "the same connection after READONLY: \(String(describing: before))")
                    // Any other error reply leaves the connection in the pool.
                    await #expect(throws: RESPError.self) { try await client.send(["NOSUCHCOMMAND"]) }
                    #expect(try await client.send(["CLIENT", "ID"]).integer == after)
                }
            }
        }
    }

    @Test func theClientConnectsToThePrimaryTheSentinelsName() async throws {
        try await RedisSentinelGroup.with { group in
            var configuration = RESPConfiguration(host: "127.0.0.1", port: group.sentinelPorts[0])
            configuration.sentinel = RESPConfiguration.Sentinel(
                addresses: [RESPConfiguration.Sentinel.Address(host: "127.0.0.1", port: 1)]
                    + group.sentinelPorts.map { RESPConfiguration.Sentinel.Address(host: "127.0.0.1", port: $0) },
                primaryName: RedisSentinelGroup.primaryName)
            let client = try RESPClient(configuration: configuration)
            // The first Sentinel listed does not answer: the next one does.
            try await client.send(["SET", "where", "primary"])
            let port = try await client.send(["CONFIG", "GET", "port"]).elements?.last?.string
            #expect(port == String(group.primary.port))
            await client.shutdown()

            var unknown = configuration
            unknown.sentinel?.primaryName = "no-such-primary"
            let lost = try RESPClient(configuration: unknown)
            let error = await #expect(throws: RESPError.self) { try await lost.send(["PING"]) }
            #expect("\(String(describing: error))".contains("knows no primary named no-such-primary"))
            await lost.shutdown()
        }
    }

    /// When the primary dies, connecting fails until the Sentinels promote its replica, and the client backs off:
    /// here for a minute or more. Their `+switch-master` announcement clears that backoff, so the client reaches
    /// the new primary as soon as it is promoted, not when the backoff ends.
    @Test func aSwitchMasterAnnouncementEndsTheBackoffAndMovesToTheNewPrimary() async throws {
        try await RedisSentinelGroup.with { group in
            var configuration = RESPConfiguration(host: "127.0.0.1", port: group.sentinelPorts[0])
            configuration.sentinel = RESPConfiguration.Sentinel(
                addresses: group.sentinelPorts.map { RESPConfiguration.Sentinel.Address(host: "127.0.0.1", port: $0) },
                primaryName: RedisSentinelGroup.primaryName)
            configuration.reconnectBackoff = .init(initial: .seconds(120), maximum: .seconds(120))
            let client = try RESPClient(configuration: configuration)
            let port = RESPCommand(["CONFIG", "GET", "port"])
            #expect(try await client.send(port).elements?.last?.string == String(group.primary.port))
            // The client listens on one of the Sentinels (the first it was given, or the next if that subscription
            // failed, a few seconds later at most): a failover announced before that is missed.
            let sentinels = try group.sentinelPorts.map { try RESPClient(configuration: RESPConfiguration(host: "127.0.0.1", port: $0)) }
            let listening = try await eventually {
                for sentinel in sentinels where (try? await sentinel.send(["CLIENT", "LIST"]).string)?.contains("sub=1") == true {
                    return true
                }
                return false
            }
            for sentinel in sentinels { await sentinel.shutdown() }
            #expect(listening)

            await group.primary.stop()
            // The connection closes, and the next attempt, to the dead primary the Sentinels still name, fails.
            let backingOff = try await eventually {
                do {
                    try await client.send(port)
                    return false
                } catch RESPError.unavailable {
                    return true
                } catch {
                    return false
                }
            }
            #expect(backingOff)
            let moved = try await eventually(within: .seconds(50)) {
                (try? await client.send(port).elements?.last?.string) == String(group.replica.port)
            }
            #expect(moved)
            await client.shutdown()
        }
    }

    /// Sentinels and data nodes that speak TLS only: the client asks the Sentinels and reaches the primary over TLS,
    /// each certificate checked against the address it is met at (Sentinels name addresses).
    @Test(.enabled(if: RedisServer.supportsTLS, "this redis-server was built without TLS"))
    func theClientFollowsSentinelsOverTLS() async throws {
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let certificates = try await TestCertificates.make(in: files, subjectAltName: "IP:127.0.0.1")
        try await RedisSentinelGroup.with(tls: certificates) { group in
            var configuration = group.sentinelConfiguration(port: group.sentinelPorts[0])
            configuration.tls?.serverName = nil
            configuration.sentinel = RESPConfiguration.Sentinel(
                addresses: group.sentinelPorts.map { RESPConfiguration.Sentinel.Address(host: "127.0.0.1", port: $0) },
                primaryName: RedisSentinelGroup.primaryName)
            let client = try RESPClient(configuration: configuration)
            try await client.send(["SET", "where", "primary over TLS"])
            #expect(try await client.send(["CONFIG", "GET", "tls-port"]).elements?.last?.string == String(group.primary.port))
            await client.shutdown()
        }
    }
}
