import Dispatch
import Foundation
import Synchronization
import TokenGateCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One external signing program: started per signature, fed the signing input, read for the signature.
struct SigningCommand: Sendable {
    /// The program and its arguments, looked up on `PATH` (no shell).
    let arguments: [String]
    /// Where it runs: the folder of config.yaml, so relative key paths work as in the rest of the file.
    let directory: String
    /// How long one signature may take before the program is stopped (`backend_timeout`).
    let timeout: Duration

    /// The most a signature can be: RSA-8192's is 1 KiB.
    static let maxSignatureBytes = 1024

    var program: String { arguments[0] }

    /// The signature of `input`. A cancelled caller stops the program: a reload never waits for a stuck one.
    func sign(_ input: [UInt8]) async throws -> [UInt8] {
        let run = try Run(self, input: input)
        return try await withTaskCancellationHandler {
            try await run.finish()
        } onCancel: {
            run.stop(because: .cancelled)
        }
    }

    /// A started process and why it was stopped, if it was.
    private final class Run: Sendable {
        enum StopReason { case cancelled, timedOut }

        private let process = Process()
        private let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        private let stopped = Mutex<StopReason?>(nil)
        private let command: SigningCommand

        init(_ command: SigningCommand, input: [UInt8]) throws {
            self.command = command
            // The input goes into the pipe before the program starts, while this process still holds the pipe's
            // read end: a program that exits without reading it can then never make the write raise SIGPIPE,
            // which would end the server. A signing input is a few hundred bytes; a pipe holds 64 KiB.
            precondition(input.count <= 16 * 1024, "a signing input is header and claims, never this large")
            try stdin.fileHandleForWriting.write(contentsOf: Data(input))
            try stdin.fileHandleForWriting.close()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = command.arguments
            process.currentDirectoryURL = URL(fileURLWithPath: command.directory)
            process.standardInput = stdin
            process.standardOutput = stdout
            process.standardError = stderr
            do {
                try process.run()
            } catch {
                throw TokenGateError(.backendUnavailable, "the signing command \(command.program) could not start: \(error)")
            }
        }

        func stop(because reason: StopReason) {
            stopped.withLock { $0 = $0 ?? reason }
            // SIGKILL: a program stuck past its deadline gets no say, and SIGTERM may not reach it (started from
            // the test process, where SIGTERM is blocked, a `sleep` outlived `terminate()`).
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }

        /// Reads both outputs to their end and waits for the exit, on a thread of its own: these calls block, and
        /// the cooperative pool must not.
        func finish() async throws -> [UInt8] {
            let deadline = DispatchWorkItem { [self] in stop(because: .timedOut) }
            let milliseconds = Int(command.timeout / .milliseconds(1))
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds), execute: deadline)
            defer { deadline.cancel() }
            let (output, errors, status) = await withCheckedContinuation { continuation in
                DispatchQueue.global().async { [self] in
                    let errors = Mutex(Data())
                    let errorsRead = DispatchGroup()
                    errorsRead.enter()
                    // Read beside stdout: a program that fills the stderr pipe first would otherwise never exit.
                    DispatchQueue.global().async { [stderr] in
                        let data = stderr.fileHandleForReading.readDataToEndOfFile()
                        errors.withLock { $0 = data }
                        errorsRead.leave()
                    }
                    let output = stdout.fileHandleForReading.readDataToEndOfFile()
                    errorsRead.wait()
                    process.waitUntilExit()
                    continuation.resume(returning: (output, errors.withLock { $0 }, process.terminationStatus))
                }
            }
            switch stopped.withLock({ $0 }) {
            case .cancelled: throw CancellationError()
            case .timedOut: throw TokenGateError(.backendTimeout, "the signing command \(command.program) took over \(command.timeout)")
            case nil: break
            }
            guard status == 0 else {
                let reason = String(decoding: errors.prefix(200), as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
                throw TokenGateError(.backendError, "the signing command \(command.program) exited with status \(status): \(reason)")
            }
            guard !output.isEmpty, output.count <= SigningCommand.maxSignatureBytes else {
                throw TokenGateError(.backendError, "the signing command \(command.program) wrote \(output.count) bytes, not a signature")
            }
            return Array(output)
        }
    }
}
