import Foundation
import Testing

/// What one run of `tokengate` produced.
struct CLIResult: CustomStringConvertible {
    /// The exit status, or 128 + the signal number when the process was killed.
    let status: Int32
    let stdout: String
    let stderr: String

    /// Both streams, for "never prints X" checks.
    var output: String { stdout + stderr }

    var description: String { "status \(status)\n--- stdout ---\n\(stdout)\n--- stderr ---\n\(stderr)" }
}

/// Runs the built `tokengate` executable in a private working directory.
///
/// Every run is bounded (killed after `timeout`), reads standard input from a file (or /dev/null, so a command
/// that defaults to reading stdin never waits on the test runner's terminal), and writes its streams to files
/// (so a large output can never fill a pipe and stall the child).
struct CLIRunner {
    /// The per-test working directory; removed by `withCLI`.
    let directory: URL
    let executable: URL
    var timeout: Duration = .seconds(30)

    /// `directory/name`, as a path.
    func path(_ name: String) -> String { directory.appending(path: name).path }

    /// Writes `text` to `directory/name` (creating intermediate directories).
    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        try write(name, Data(text.utf8))
    }

    /// Writes `data` to `directory/name` (creating intermediate directories).
    @discardableResult
    func write(_ name: String, _ data: Data) throws -> String {
        let url = directory.appending(path: name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url)
        return url.path
    }

    /// Reads `directory/name`.
    func read(_ name: String) throws -> Data {
        try Data(contentsOf: directory.appending(path: name))
    }

    /// Runs `tokengate arguments…`, feeding `stdin` if given, with `environment` added to this process's; with
    /// `openFileLimit`, under that `RLIMIT_NOFILE` (soft and hard, set by `sh`, which then execs it).
    func run(
        _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:], openFileLimit: Int? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws
        -> CLIResult
    {
        let runID = UUID().uuidString
        let outURL = directory.appending(path: ".run-\(runID).out")
        let errURL = directory.appending(path: ".run-\(runID).err")
        let inURL = directory.appending(path: ".run-\(runID).in")
        defer {
            for url in [outURL, errURL, inURL] { try? FileManager.default.removeItem(at: url) }
        }
        for url in [outURL, errURL] { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        let outHandle = try FileHandle(forWritingTo: outURL)
        let errHandle = try FileHandle(forWritingTo: errURL)
        defer {
            try? outHandle.close()
            try? errHandle.close()
        }

        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let openFileLimit {
            process.arguments = ["-c", "ulimit -n \(openFileLimit) && exec \"$0\" \"$@\"", executable.path] + arguments
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
        }
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.currentDirectoryURL = directory
        process.standardOutput = outHandle
        process.standardError = errHandle
        var inHandle: FileHandle?
        if let stdin {
            try Data(stdin.utf8).write(to: inURL)
            inHandle = try FileHandle(forReadingFrom: inURL)
            process.standardInput = inHandle
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        defer { try? inHandle?.close() }

        let (exits, exited) = AsyncStream.makeStream(of: Void.self)
        process.terminationHandler = { _ in
            exited.yield()
            exited.finish()
        }
        try process.run()
        let timeout = self.timeout
        let finished = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in exits { return true }
                return !Task.isCancelled
            }
            group.addTask {
                // A watchdog, not synchronisation: the normal path never waits for it.
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        if !finished {
            process.terminate()
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            Issue.record("tokengate \(arguments.joined(separator: " ")) did not exit within \(timeout)", sourceLocation: sourceLocation)
        }
        // The termination handler may run before Process has published the status; this returns at once after it.
        process.waitUntilExit()
        let status = process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
        let result = CLIResult(
            status: status,
            stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self)
        )
        // Requirement 5, checked on every run: no private key material ever reaches a terminal.
        #expect(!result.output.contains("PRIVATE KEY"), "output holds private key text:\n\(result)", sourceLocation: sourceLocation)
        return result
    }
}

/// Runs `body` with a runner whose working directory is a fresh temporary directory, removed afterwards.
func withCLI<T>(_ body: (CLIRunner) async throws -> T) async throws -> T {
    let executable = try TokenGateExecutable.url()
    let directory = FileManager.default.temporaryDirectory.appending(path: "tokengate-cli-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(CLIRunner(directory: directory, executable: executable))
}
