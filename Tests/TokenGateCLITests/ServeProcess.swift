import Foundation
import Testing
import TokenGateTesting

/// `tokengate serve` running in the background of a test, its output in files of the runner's directory.
///
/// Every wait is bounded; `stop()` sends SIGTERM (graceful shutdown) and kills the process if it lingers.
final class ServeProcess: @unchecked Sendable {  // used from one test at a time; Process is thread-safe enough here
    let process: Process
    let port: Int
    private let outURL: URL
    private let errURL: URL

    private init(process: Process, port: Int, outURL: URL, errURL: URL) {
        self.process = process
        self.port = port
        self.outURL = outURL
        self.errURL = errURL
    }

    /// The process ID.
    var pid: Int32 { process.processIdentifier }

    /// The admin listener's port, from the line `serve` printed for it.
    var adminPort: Int? {
        let out = (try? String(contentsOf: outURL, encoding: .utf8)) ?? ""
        return out.split(separator: "\n").first { $0.hasPrefix("tokengate admin listening on http://") }
            .flatMap { $0.split(separator: ":").last.flatMap { Int($0) } }
    }

    /// The admin listener's port once `serve` has printed it (bounded wait: the admin listener may start a moment
    /// after the public one); records an issue and throws if it never does.
    func listeningAdminPort(sourceLocation: SourceLocation = #_sourceLocation) async throws -> Int {
        if try await eventually({ adminPort != nil }), let adminPort { return adminPort }
        Issue.record("tokengate serve printed no admin listener line:\n\(stderr)", sourceLocation: sourceLocation)
        throw CancellationError()
    }

    /// A test that ends early (a failed `#require`) never reaches `stop()`: the process must not outlive it.
    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Everything written to standard error so far.
    var stderr: String { (try? String(contentsOf: errURL, encoding: .utf8)) ?? "" }

    /// Starts `tokengate serve arguments…` in `cli`'s directory and waits for its "listening" line; with
    /// `openFileLimits`, under those soft and hard `RLIMIT_NOFILE` values (set by `sh`, which then execs it); with
    /// `cpu`, pinned to that CPU (by `taskset`, which then execs it); `environment` added to the test's own.
    static func start(
        _ cli: CLIRunner, _ arguments: [String], openFileLimits: (soft: Int, hard: Int)? = nil, cpu: Int? = nil,
        environment: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ServeProcess {
        let id = UUID().uuidString
        let outURL = cli.directory.appending(path: ".serve-\(id).out")
        let errURL = cli.directory.appending(path: ".serve-\(id).err")
        for url in [outURL, errURL] { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        let process = Process()
        process.executableURL = cli.executable
        // Tests run side by side: the admin listener takes any free port unless the test picks one.
        process.arguments = ["serve"] + arguments + (arguments.contains("--admin-port") ? [] : ["--admin-port", "0"])
        if let limits = openFileLimits {
            let script = "ulimit -Sn \(limits.soft) && ulimit -Hn \(limits.hard) && exec \"$0\" \"$@\""
            process.arguments = ["-c", script, cli.executable.path] + (process.arguments ?? [])
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
        }
        if let cpu {
            process.arguments = ["-c", "\(cpu)", process.executableURL?.path ?? ""] + (process.arguments ?? [])
            process.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
        }
        process.currentDirectoryURL = cli.directory
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        try process.run()
        for _ in 0..<600 {
            let out = (try? String(contentsOf: outURL, encoding: .utf8)) ?? ""
            if let line = out.split(separator: "\n").first(where: { $0.hasPrefix("tokengate listening on http://") }),
                let port = line.split(separator: ":").last.flatMap({ Int($0) })
            {
                return ServeProcess(process: process, port: port, outURL: outURL, errURL: errURL)
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let errors = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        process.terminate()
        process.waitUntilExit()
        Issue.record("tokengate serve did not start listening:\n\(errors)", sourceLocation: sourceLocation)
        throw CancellationError()
    }

    /// Waits (bounded) until standard error contains `text`.
    func waitForStderr(containing text: String) async throws -> Bool {
        try await eventually { stderr.contains(text) }
    }

    /// SIGTERM, then the exit status (SIGKILL after ten seconds).
    @discardableResult
    func stop() async throws -> Int32 {
        if process.isRunning { process.terminate() }
        _ = try await eventually(within: .seconds(10)) { !process.isRunning }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
