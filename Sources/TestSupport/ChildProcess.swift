import Foundation

/// Runs a command to its end without holding a thread: a test that waits for `openssl` or schemathesis with
/// `waitUntilExit()` would block one of the few cooperative threads (two on a 2-core machine) for the whole run
/// and stall every other test in the process.
package enum ChildProcess {
    /// Runs `command` (looked up on PATH) with `arguments`; returns its exit status and its output (the last `keep`
    /// characters), standard error included unless `mergingErrors` is false (output a test parses, such as a PEM
    /// or JSON document, then holds nothing but standard output).
    package static func run(
        _ command: String, _ arguments: [String], keep: Int = 6000, mergingErrors: Bool = true
    ) async throws -> (status: Int32, output: String) {
        let output = FileManager.default.temporaryDirectory.appending(path: "tokengate-child-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [command] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = handle
        process.standardError = mergingErrors ? handle : FileHandle.nullDevice
        process.currentDirectoryURL = FileManager.default.temporaryDirectory
        let status = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        try handle.close()
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return (status, String(text.suffix(keep)))
    }
}
