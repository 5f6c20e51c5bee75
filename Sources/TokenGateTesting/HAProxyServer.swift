import Foundation
import Synchronization

/// A real `haproxy` on 127.0.0.1 and a free port in front of a gateway, for one test: the proxy a production
/// gateway sits behind, with the headers it really writes.
package final class HAProxyServer: Sendable {
    /// How haproxy tells the gateway who the client is.
    package enum Mode: Sendable {
        /// HTTP mode, appending the client to `X-Forwarded-For` (`option forwardfor`).
        case forwardedFor
        /// TCP mode, opening each connection to the gateway with a PROXY protocol v2 header (`send-proxy-v2`).
        case proxyProtocolV2
        /// TCP mode with a v1 (text) header (`send-proxy`).
        case proxyProtocolV1
    }

    /// The loopback port clients connect to.
    package let port: Int
    private let process: Mutex<Process?>

    private init(port: Int, process: Process) {
        self.port = port
        self.process = Mutex(process)
    }

    /// Starts haproxy forwarding to `127.0.0.1:backendPort` in `mode`, runs `body`, stops it whatever happens.
    package static func with<Result>(
        backendPort: Int, mode: Mode, _ body: (HAProxyServer) async throws -> Result
    ) async throws -> Result {
        let directory = try TemporaryDirectory(prefix: "haproxy")
        defer { directory.remove() }
        return try await LoopbackServer.with(
            "haproxy",
            start: { port in
                let configuration = "\(directory.path)/haproxy.cfg"
                try Self.configuration(port: port, backendPort: backendPort, mode: mode).write(
                    toFile: configuration, atomically: true, encoding: .utf8)
                return try await start(port: port, configuration: configuration, log: "\(directory.path)/haproxy.log")
            }, stop: { await $0.stop() }, body)
    }

    static func configuration(port: Int, backendPort: Int, mode: Mode) -> String {
        let (proxyMode, options, send) =
            switch mode {
            case .forwardedFor: ("http", "    option forwardfor\n    option http-keep-alive\n", "")
            case .proxyProtocolV2: ("tcp", "", " send-proxy-v2")
            case .proxyProtocolV1: ("tcp", "", " send-proxy")
            }
        return """
            global
                maxconn 2000
            defaults
                mode \(proxyMode)
                timeout connect 5s
                timeout client 60s
                timeout server 60s
            \(options)frontend clients
                bind 127.0.0.1:\(port)
                default_backend gateway
            backend gateway
                server gateway 127.0.0.1:\(backendPort)\(send)

            """
    }

    private static func start(port: Int, configuration: String, log: String) async throws -> HAProxyServer {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try executable())
        // -db: stay in the foreground, no daemon; the test owns the process.
        process.arguments = ["-db", "-f", configuration]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        let server = HAProxyServer(port: port, process: process)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while clock.now < deadline {
            if !process.isRunning {
                let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                throw HarnessError("haproxy exited \(process.terminationStatus) on port \(port):\n\(text)")
            }
            if (try? await RawConnection.open(port: port, receiveTimeout: .seconds(1))) != nil { return server }
            try await Task.sleep(for: .milliseconds(20))
        }
        await server.stop()
        throw HarnessError("haproxy did not accept connections on port \(port) within 10 s")
    }

    /// Kills the process and waits for it to end (as ``RedisServer/stop()``: SIGTERM is blocked in the test process).
    package func stop() async {
        guard
            let process = self.process.withLock({ current in
                defer { current = nil }
                return current
            }), process.isRunning
        else { return }
        kill(process.processIdentifier, SIGKILL)
        while process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// `haproxy` on PATH or in /usr/sbin; a missing binary fails the test and says how to install it.
    package static func executable() throws -> String {
        let searchPath = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin") + ":/usr/sbin:/usr/local/sbin"
        for directory in searchPath.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(directory)/haproxy") {
            return "\(directory)/haproxy"
        }
        throw HarnessError("haproxy is not on PATH: apt-get install -y haproxy (scripts/test does it)")
    }
}
