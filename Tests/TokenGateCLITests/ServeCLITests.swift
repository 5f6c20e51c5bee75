import Foundation
import Testing
import TokenGateTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `tokengate serve` as an operator meets it: a port someone else holds, a process out of file descriptors, and
/// one pinned to a CPU.
@Suite struct ServeCLITests {
    static let apiKey = "tg_serve_test_key_not_a_secret_0123456789"

    /// The names of `pid`'s threads that run the listeners' event loops (NIO names its groups' threads
    /// `NIO-ELT-…`; the loops HTTP and Redis clients share are `NIO-SGLTN-…`).
    static func eventLoopThreads(_ pid: Int32) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").compactMap { task in
            let name = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8)
            return name.flatMap { $0.hasPrefix("NIO-ELT-") ? $0 : nil }
        }
    }

    /// Pinned to one CPU (`taskset`, systemd's `CPUAffinity=`), serve runs one event loop, not one per CPU of the
    /// machine taking turns on that one; `server.eventLoops` sets the number whatever the CPUs.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset") && FileManager.default.fileExists(atPath: "/proc/self/task")))
    func serveRunsOneEventLoopPerCPUItMayUseUnlessConfigured() async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", try CLIFixtures.staticKeyConfig(apiKey: Self.apiKey))
            let pinned = try await ServeProcess.start(cli, ["--config", "config.yaml", "--port", "0"], cpu: 0)
            #expect(try await pinned.waitForStderr(containing: "serving on 1 event loop"), "\(pinned.stderr)")
            #expect(try Self.eventLoopThreads(pinned.pid).count == 1)
            #expect(try await pinned.stop() == 0)

            let configured = try CLIFixtures.staticKeyConfig(apiKey: Self.apiKey)
                .replacingOccurrences(of: "  port: 8080\n", with: "  port: 8080\n  eventLoops: 3\n")
            try cli.write("config.yaml", configured)
            let three = try await ServeProcess.start(cli, ["--config", "config.yaml", "--port", "0"], cpu: 0)
            #expect(try await three.waitForStderr(containing: "serving on 3 event loops"), "\(three.stderr)")
            #expect(try Self.eventLoopThreads(three.pid).count == 3)
            #expect(try await three.stop() == 0)
        }
    }

    /// The resident memory of `pid`, in kilobytes (`VmRSS` of /proc).
    static func residentKilobytes(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// A burst of connections that come and go leaves the memory they used to the system, not held by the allocator
    /// (10,000 connections once left serve at 200 MB where it had started at 45).
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/status")))
    func memoryABurstOfConnectionsUsedIsGivenBack() async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", try CLIFixtures.staticKeyConfig(apiKey: Self.apiKey))
            let serve = try await ServeProcess.start(cli, ["--config", "config.yaml", "--port", "0"])
            let before = try Self.residentKilobytes(serve.pid)
            var open: [RawConnection] = []
            for index in 0..<4000 {
                let connection = try await RawConnection.open(port: serve.port)
                try await connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Index: \(index)\r\n\r\n")
                open.append(connection)
            }
            let peak = try Self.residentKilobytes(serve.pid)
            for connection in open { await connection.close() }
            open.removeAll()
            let returned = try await eventually(within: TestTiming.bound(.seconds(30)), every: .milliseconds(500)) {
                try Self.residentKilobytes(serve.pid) < before + (peak - before) / 2
            }
            let after = try Self.residentKilobytes(serve.pid)
            #expect(returned, "resident \(after) kB: \(before) kB before the burst, \(peak) kB at its peak")
            #expect(try await serve.stop() == 0)
        }
    }

    @Test func servingOnABusyPortExits2NamingTheAddress() async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", try CLIFixtures.staticKeyConfig(apiKey: Self.apiKey))
            let holder = try PortHolder()
            defer { holder.close() }
            let result = try await cli.run(["serve", "--config", "config.yaml", "--port", "\(holder.port)", "--admin-port", "0"])
            #expect(result.status == 2, "\(result)")
            // One line says it (a listener's own shutdown log may still land after it: another thread writes that).
            #expect(
                result.stderr.split(separator: "\n").contains("tokengate: cannot listen on 127.0.0.1:\(holder.port): address already in use"),
                "\(result)")
            #expect(!result.output.contains("IOError") && !result.output.contains("bind(descriptor"))
            #expect(!result.stdout.contains("tokengate listening"))
        }
    }

    /// `serve` raises its soft open-file limit to the hard one (a soft 1024 would refuse connections long before
    /// `maxConnections`), lowers the connection cap to fit when even the hard limit is too low, and refuses to start
    /// when not even the admin cap and a reserve fit.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/limits")))
    func serveRaisesItsOpenFileLimitAndWarnsWhenTheHardLimitIsTooLow() async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", try CLIFixtures.staticKeyConfig(apiKey: Self.apiKey))
            func openFiles(_ pid: Int32) throws -> [String] {
                let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
                let line = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") } ?? ""
                return line.dropFirst("Max open files".count).split(separator: " ").prefix(2).map(String.init)
            }
            let roomy = try await ServeProcess.start(cli, ["--config", "config.yaml", "--port", "0"], openFileLimits: (1024, 16384))
            #expect(try openFiles(roomy.pid) == ["16384", "16384"])
            #expect(!roomy.stderr.contains("is below server.maxConnections"), "\(roomy.stderr)")
            #expect(try await roomy.stop() == 0)

            // Too low for the default cap of 10,000: the cap is lowered to fit, beside the admin cap and the reserve.
            let tight = try await ServeProcess.start(cli, ["--config", "config.yaml", "--port", "0"], openFileLimits: (1024, 2048))
            #expect(try openFiles(tight.pid) == ["2048", "2048"])
            #expect(
                tight.stderr.contains(
                    "server.maxConnections lowered from 10000 to 1536 to fit the open-file limit (2048, hard limit 2048) "
                        + "beside server.admin.maxConnections (256) and 256 descriptors"
                ), "\(tight.stderr)")
            #expect(try await tight.stop() == 0)

            // Too low for the admin cap and the reserve: refused at start, saying what to raise.
            let refused = try await cli.run(["serve", "--config", "config.yaml", "--port", "0", "--admin-port", "0"], openFileLimit: 500)
            #expect(refused.status == 2, "\(refused)")
            #expect(
                refused.stderr.contains(
                    "the open-file limit (500, hard limit 500) cannot hold server.admin.maxConnections (256), 256 descriptors "
                        + "for the gateway's own files and calls, and 64 public connections"
                ), "\(refused)")
            #expect(!refused.stdout.contains("tokengate listening"))
        }
    }

    /// With the descriptor limit lowered under it, `accept` fails with EMFILE: the server says so and keeps
    /// serving once descriptors are free again.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit") && FileManager.default.fileExists(atPath: "/proc/self/fd")))
    func runningOutOfFileDescriptorsIsLoggedAndSurvived() async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", try CLIFixtures.staticKeyConfig(apiKey: Self.apiKey))
            let server = try await ServeProcess.start(cli, ["--config", "config.yaml", "--port", "0"])
            // Both listeners up before the limit drops: an admin socket still to open would fail with EMFILE and
            // stop the whole process (a loaded CI run saw exactly that as a refused connection).
            let adminPort = try await server.listeningAdminPort()
            let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(server.pid)/fd").count
            let limited = try await cli.runTool("/usr/bin/prlimit", ["--pid", "\(server.pid)", "--nofile=\(open + 4):\(open + 4)"])
            try #require(limited == 0)
            var connections: [RawConnection] = []
            for _ in 0..<12 { connections.append(try await RawConnection.open(port: server.port, receiveTimeout: .seconds(2))) }
            let logged = try await server.waitForStderr(containing: "cannot accept connections: out of file descriptors")
            #expect(logged, "\(server.stderr)")
            #expect(server.stderr.contains("errno=EMFILE"))
            // While connections wait that cannot be accepted, accepting backs off instead of failing again at once:
            // the process idles (the busy loop this replaced took a whole core and millions of failed accepts).
            let before = try Self.cpuTicks(server.pid)
            try await Task.sleep(for: .seconds(2))
            let busy = Double(try Self.cpuTicks(server.pid) - before) / Double(sysconf(Int32(_SC_CLK_TCK))) / 2
            #expect(busy < 0.3, "\(Int(busy * 100)) % of a core while out of descriptors")
            for connection in connections { await connection.close() }
            connections = []
            // NIO retries accepting a second after EMFILE; the queued and new connections are served.
            var served = false
            for _ in 0..<100 where !served {
                let probe = try await RawConnection.open(port: server.port, receiveTimeout: .seconds(3))
                try await probe.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                served = try await probe.readResponse()?.status == 200
                if !served { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(served)
            let metrics = try await RawConnection.open(port: adminPort, receiveTimeout: .seconds(5))
            try await metrics.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            let scrape = MetricsScrape(try await metrics.readResponse()?.text ?? "")
            let failures = try #require(scrape["tokengate_accept_failures_total", ["reason": "file_descriptors", "listener": "public"]])
            #expect(failures >= 1 && failures < 1000, "\(failures) failed accepts")
            #expect(try await server.stop() == 0)
        }
    }

    /// User and system CPU time the process has used, in clock ticks.
    static func cpuTicks(_ pid: Int32) throws -> Int {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name (which may hold spaces) start after its closing parenthesis.
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        return Int(fields[11])! + Int(fields[12])!
    }
}

/// A TCP socket on 127.0.0.1 and a free port, held until `close()`: listening (connections wait, unanswered), or
/// only bound (connections are refused, and no other process can take the port meanwhile).
struct PortHolder {
    let descriptor: Int32
    let port: Int

    init(listening: Bool = true) throws {
        #if canImport(Darwin)
            let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #else
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && (!listening || listen(descriptor, 8) == 0)
                    && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard descriptor >= 0, bound else { throw CocoaError(.fileWriteUnknown) }
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() {
        #if canImport(Darwin)
            _ = Darwin.close(descriptor)
        #else
            _ = Glibc.close(descriptor)
        #endif
    }
}

extension CLIRunner {
    /// Runs another program (not tokengate) to completion; returns its exit status.
    func runTool(_ path: String, _ arguments: [String]) async throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        _ = try await eventually(within: .seconds(10)) { !process.isRunning }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
