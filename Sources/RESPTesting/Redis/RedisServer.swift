import Foundation
import Synchronization

/// A failure of the test harness itself (no redis-server, a server that never came up), never of the code under test.
package struct HarnessError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// A real `redis-server` on 127.0.0.1 and a free port, started for one test and stopped after it, even when the
/// test throws. It can be stopped and started again on the same port, as a server restart.
package final class RedisServer: Sendable {
    /// What the server is started with, beyond the defaults (no persistence, loopback only).
    package struct Options: Sendable {
        /// `requirepass`: the default user's password.
        package var password: String?
        /// ACL users, each with every permission: `(name, password)`.
        package var users: [(name: String, password: String)] = []
        /// Serve TLS only, with this material.
        package var tls: TestCertificates?
        /// Replicate the server on this loopback port (`replicaof`).
        package var replicaOf: Int?
        /// Run as a Redis Cluster node (`cluster-enabled`), not yet part of a cluster.
        package var clusterNode = false

        /// Options for `password`, `users`, `tls` and `replicaOf`.
        package init(
            password: String? = nil, users: [(name: String, password: String)] = [], tls: TestCertificates? = nil, replicaOf: Int? = nil
        ) {
            self.password = password
            self.users = users
            self.tls = tls
            self.replicaOf = replicaOf
        }
    }

    /// The loopback port it listens on.
    package let port: Int
    package let options: Options
    let directory: TemporaryDirectory
    /// A cluster node's bus port (`cluster-port`): by default Redis takes port + 10000, which a free port above 55535
    /// cannot have.
    private let clusterBusPort: Int?
    private let process: Mutex<Process?>

    private init(port: Int, options: Options, directory: TemporaryDirectory) throws {
        self.port = port
        self.options = options
        self.directory = directory
        self.clusterBusPort = options.clusterNode ? try Self.freeLoopbackPort() : nil
        self.process = Mutex(nil)
    }

    /// Starts a server, runs `body`, stops the server whatever happens.
    @discardableResult
    package static func with<Result>(
        _ options: Options = Options(), _ body: (RedisServer) async throws -> Result
    ) async throws -> Result {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        return try await LoopbackServer.with(
            "redis-server",
            start: { port in
                let server = try RedisServer(port: port, options: options, directory: directory)
                try await server.start()
                return server
            }, stop: { await $0.stop() }, body)
    }

    /// Starts (or restarts) the server on its port and waits until it accepts connections.
    package func start() async throws {
        let logFile = "\(directory.path)/redis-\(UUID().uuidString).log"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Self.executable())
        process.arguments = arguments(logFile: logFile)
        process.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process.withLock { $0 = process }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while clock.now < deadline {
            let log = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
            if log.contains("Ready to accept connections") { return }
            if !process.isRunning {
                throw HarnessError("redis-server exited \(process.terminationStatus) on port \(port):\n\(log)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        await stop()
        throw HarnessError("redis-server did not accept connections on port \(port) within 10 s")
    }

    /// Kills the process (SIGKILL) and waits for it to end. Not SIGTERM: the server keeps nothing worth a clean
    /// shutdown, and it inherits the test process's blocked signals, SIGTERM among them, so a SIGTERM was never
    /// acted on and every stop waited out a 5 s grace period.
    package func stop() async {
        guard
            let process = self.process.withLock({ current in
                defer { current = nil }
                return current
            })
        else { return }
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        while process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
    }

    private func arguments(logFile: String) -> [String] {
        var arguments = [
            "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", logFile,
            "--dir", directory.path, "--enable-debug-command", "local",
        ]
        if let tls = options.tls {
            arguments += [
                "--port", "0", "--tls-port", String(port), "--tls-cert-file", tls.serverCertificate, "--tls-key-file",
                tls.serverKey, "--tls-ca-cert-file", tls.caCertificate, "--tls-auth-clients", "no", "--tls-replication", "yes",
            ]
        } else {
            arguments += ["--port", String(port)]
        }
        if let password = options.password { arguments += ["--requirepass", password] }
        if let primary = options.replicaOf { arguments += ["--replicaof", "127.0.0.1", String(primary)] }
        if let clusterBusPort {
            arguments += [
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes-\(port).conf", "--cluster-node-timeout", "1000",
                "--cluster-port", String(clusterBusPort),
            ]
        }
        for user in options.users { arguments += ["--user", user.name, "on", ">\(user.password)", "~*", "&*", "+@all"] }
        return arguments
    }

    /// `redis-server` on PATH; a missing binary fails the test and says how to install it.
    package static func executable() throws -> String {
        let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in searchPath.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(directory)/redis-server") {
            return "\(directory)/redis-server"
        }
        throw HarnessError("redis-server is not on PATH: apt-get install -y redis-server (scripts/test does it)")
    }

    /// Whether this redis-server was built with TLS: its TLS settings exist only then (`USE_OPENSSL`).
    package static let supportsTLS: Bool = {
        guard let path = try? executable(), let binary = FileManager.default.contents(atPath: path) else { return false }
        return binary.range(of: Data("tls-cert-file".utf8)) != nil
    }()

    /// A port nobody listens on now: bind 127.0.0.1:0, read the port, close.
    package static func freeLoopbackPort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw HarnessError("socket() failed: \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else { throw HarnessError("bind(127.0.0.1:0) failed: \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
