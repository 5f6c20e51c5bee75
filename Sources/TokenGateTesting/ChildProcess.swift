import Foundation

/// Runs a command to its end without holding a thread: a test that waits for `openssl` or schemathesis with
/// `waitUntilExit()` would block one of the few cooperative threads (two on a 2-core machine) for the whole run
/// and stall every other test in the process.
public enum ChildProcess {
    /// Runs `command` (looked up on PATH) with `arguments`; returns its exit status and its output, standard error
    /// included (the last `keep` characters).
    public static func run(_ command: String, _ arguments: [String], keep: Int = 6000) async throws -> (status: Int32, output: String) {
        let log = try OutputFile()
        defer { log.remove() }
        let status = try await run(command, arguments, standardOutput: log.handle, standardError: log.handle)
        return (status, String(try log.text().suffix(keep)))
    }

    /// Runs `command` (looked up on PATH) with `arguments`; returns its exit status, its standard output whole (a
    /// PEM or JSON document the test reads) and its standard error apart.
    public static func capture(_ command: String, _ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let (stdout, stderr) = (try OutputFile(), try OutputFile())
        defer {
            stdout.remove()
            stderr.remove()
        }
        let status = try await run(command, arguments, standardOutput: stdout.handle, standardError: stderr.handle)
        return (status, try stdout.text(), try stderr.text())
    }

    private static func run(
        _ command: String, _ arguments: [String], standardOutput: FileHandle, standardError: FileHandle
    ) async throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [command] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = standardOutput
        process.standardError = standardError
        process.currentDirectoryURL = FileManager.default.temporaryDirectory
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
    }

    /// A temporary file a child writes to: a pipe would need a thread to drain it while the child runs.
    private struct OutputFile {
        let url = FileManager.default.temporaryDirectory.appending(path: "tokengate-child-\(UUID().uuidString).log")
        let handle: FileHandle

        init() throws {
            _ = FileManager.default.createFile(atPath: url.path, contents: nil)
            handle = try FileHandle(forWritingTo: url)
        }

        func text() throws -> String {
            try handle.close()
            return (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        }

        func remove() {
            try? handle.close()
            try? FileManager.default.removeItem(at: url)
        }
    }
}
