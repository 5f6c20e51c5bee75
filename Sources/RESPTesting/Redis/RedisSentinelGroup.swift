import Foundation
import Logging
package import RESP
import Synchronization

/// A primary, its replica and three Sentinels watching them, all real `redis-server` processes on 127.0.0.1 and free
/// ports (a Sentinel is `redis-server sentinel.conf --sentinel`), started for one test and stopped after it. The
/// Sentinels fail a primary over one second after it stops answering. With `tls`, every one of them speaks TLS
/// only, to clients and to each other.
package final class RedisSentinelGroup: Sendable {
    /// The name the Sentinels monitor the primary under.
    package static let primaryName = "tokengate-test"

    /// The primary at start.
    package let primary: RedisServer
    /// Its replica, which a failover promotes.
    package let replica: RedisServer
    /// The Sentinels' loopback ports.
    package let sentinelPorts: [Int]
    /// The TLS material every process serves with, or nil.
    package let tls: TestCertificates?
    private let processes: Mutex<[Process]>

    private init(primary: RedisServer, replica: RedisServer, sentinelPorts: [Int], tls: TestCertificates?, processes: [Process]) {
        self.primary = primary
        self.replica = replica
        self.sentinelPorts = sentinelPorts
        self.tls = tls
        self.processes = Mutex(processes)
    }

    /// `127.0.0.1:PORT` of each Sentinel, comma-separated (a YAML flow list's items).
    package var sentinelAddresses: String { sentinelPorts.map { "127.0.0.1:\($0)" }.joined(separator: ", ") }

    /// Starts the group, waits until every Sentinel knows the replica and the other Sentinels (a failover needs
    /// both), runs `body`, stops every process whatever happens.
    package static func with<Result>(tls: TestCertificates? = nil, _ body: (RedisSentinelGroup) async throws -> Result) async throws -> Result {
        try await RedisServer.with(RedisServer.Options(tls: tls)) { primary in
            try await RedisServer.with(RedisServer.Options(tls: tls, replicaOf: primary.port)) { replica in
                let directory = try TemporaryDirectory()
                defer { directory.remove() }
                var processes: [Process] = []
                var ports: [Int] = []
                do {
                    for _ in 0..<3 {
                        let port = try RedisServer.freeLoopbackPort()
                        processes.append(try startSentinel(port: port, primaryPort: primary.port, tls: tls, directory: directory))
                        ports.append(port)
                    }
                } catch {
                    stop(processes)
                    throw error
                }
                let group = RedisSentinelGroup(primary: primary, replica: replica, sentinelPorts: ports, tls: tls, processes: processes)
                defer { group.stopSentinels() }
                try await group.waitUntilWatching()
                return try await body(group)
            }
        }
    }

    /// The port of the server the Sentinels name as the primary now (asked of the first that answers).
    package func namedPrimaryPort() async throws -> Int? {
        for port in sentinelPorts {
            let reply = try? await ask(port, ["SENTINEL", "GET-MASTER-ADDR-BY-NAME", Self.primaryName])
            if let port = reply?.elements?.last?.string.flatMap({ Int($0) }) { return port }
        }
        return nil
    }

    /// Asks a Sentinel to fail over now (`SENTINEL FAILOVER`), the primary still up: it is demoted to a replica.
    package func forceFailover() async throws {
        _ = try await ask(sentinelPorts[0], ["SENTINEL", "FAILOVER", Self.primaryName])
    }

    private static func startSentinel(port: Int, primaryPort: Int, tls: TestCertificates?, directory: TemporaryDirectory) throws -> Process {
        let listener =
            if let tls {
                """
                port 0
                tls-port \(port)
                tls-cert-file "\(tls.serverCertificate)"
                tls-key-file "\(tls.serverKey)"
                tls-ca-cert-file "\(tls.caCertificate)"
                tls-auth-clients no
                tls-replication yes
                """
            } else {
                "port \(port)"
            }
        let configuration = """
            \(listener)
            bind 127.0.0.1
            daemonize no
            logfile "\(directory.path)/sentinel-\(port).log"
            dir "\(directory.path)"
            sentinel monitor \(primaryName) 127.0.0.1 \(primaryPort) 2
            sentinel down-after-milliseconds \(primaryName) 1000
            sentinel failover-timeout \(primaryName) 4000
            sentinel parallel-syncs \(primaryName) 1

            """
        // Sentinel rewrites its configuration file as it learns: one each, writable.
        let path = "\(directory.path)/sentinel-\(port).conf"
        try configuration.write(toFile: path, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try RedisServer.executable())
        process.arguments = [path, "--sentinel"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Until each Sentinel lists the replica and the two other Sentinels: 30 s at most (their hello messages go
    /// every 2 s).
    private func waitUntilWatching() async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        var seen: [String] = []
        while clock.now < deadline {
            seen = []
            for port in sentinelPorts {
                let replicas = try? await ask(port, ["SENTINEL", "REPLICAS", Self.primaryName])
                let sentinels = try? await ask(port, ["SENTINEL", "SENTINELS", Self.primaryName])
                // At least: an entry the Sentinel has not pruned yet (an address it met twice) does no harm.
                if (replicas?.elements?.count ?? 0) < 1 || (sentinels?.elements?.count ?? 0) < 2 {
                    seen.append("\(port): \(replicas?.elements?.count ?? -1) replicas, \(sentinels?.elements?.count ?? -1) Sentinels")
                }
            }
            if seen.isEmpty { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw HarnessError("the Sentinels did not all see the replica and each other within 30 s: \(seen.joined(separator: "; "))")
    }

    /// A configuration for the Sentinel on `port` (its TLS too), adjusted by `configure`.
    package func sentinelConfiguration(port: Int, _ configure: (inout RESPConfiguration) -> Void = { _ in }) -> RESPConfiguration {
        var configuration = RESPConfiguration(host: "127.0.0.1", port: port)
        if let tls { configuration.tls = .init(trustRoots: .certificateFile(tls.caCertificate), serverName: "localhost") }
        configure(&configuration)
        return configuration
    }

    private func ask(_ port: Int, _ command: [String]) async throws -> RESPValue {
        let configuration = sentinelConfiguration(port: port) { $0.maxConnections = 1 }
        let client = try RESPClient(configuration: configuration, logger: Logger(label: "sentinel-test") { _ in SwiftLogNoOpLogHandler() })
        do {
            let reply = try await client.send(command)
            await client.shutdown()
            return reply
        } catch {
            await client.shutdown()
            throw error
        }
    }

    private func stopSentinels() {
        Self.stop(
            processes.withLock { processes in
                defer { processes = [] }
                return processes
            })
    }

    private static func stop(_ processes: [Process]) {
        for process in processes where process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
