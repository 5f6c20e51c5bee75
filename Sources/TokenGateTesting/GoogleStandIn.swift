import AsyncHTTPClient
import Foundation
package import JOSE
import NIOCore
import NIOHTTP1
import Synchronization

/// The Google stand-in (`Tests/Peers/google/google_standin.py`: metadata server, OAuth token endpoint, STS, IAM
/// Credentials, public keys, the AWS instance metadata service) on a loopback port, and again with mutual TLS on a
/// second one, started for one test and stopped after it, even when the test throws.
package final class GoogleStandIn: Sendable {
    /// `http://127.0.0.1:PORT`.
    package let baseURL: String
    /// The loopback port.
    package let port: Int
    /// `https://127.0.0.1:MTLS_PORT`: every endpoint again, for clients presenting a certificate of the stand-in's
    /// CAs (its sts.mtls and iamcredentials.mtls); its server certificate is issued by `caFile`.
    package let mtlsBaseURL: String
    /// Where the stand-in writes exported key files and authorized_user files.
    package let stateDirectory: String
    private let process: Process
    // The write end of the stand-in's stdin: it stops by itself when this closes (--exit-on-stdin-eof), so a test
    // process that dies without `stop()` leaves no stand-in behind.
    private let stdin: Pipe

    private init(port: Int, mtlsPort: Int, stateDirectory: String, process: Process, stdin: Pipe) {
        self.port = port
        self.baseURL = "http://127.0.0.1:\(port)"
        self.mtlsBaseURL = "https://127.0.0.1:\(mtlsPort)"
        self.stateDirectory = stateDirectory
        self.process = process
        self.stdin = stdin
    }

    /// At most this many stand-ins run at once in one test process: each is a Python process that makes RSA keys
    /// as it starts, and forty of them at once beside the whole suite on two cores starved everything else.
    private static let running = TestSlots(3)

    /// Starts a stand-in with an empty state directory, runs `body`, stops it whatever happens. Waits for one of
    /// the few stand-in slots first.
    package static func with<Result>(_ body: (GoogleStandIn) async throws -> Result) async throws -> Result {
        try await running.withSlot { try await run(body) }
    }

    private static func run<Result>(_ body: (GoogleStandIn) async throws -> Result) async throws -> Result {
        let directory = try TemporaryDirectory(prefix: "google-standin")
        defer { directory.remove() }
        let standIn = try await start(in: directory)
        do {
            let result = try await body(standIn)
            await standIn.stop()
            return result
        } catch {
            await standIn.stop()
            throw error
        }
    }

    /// The script, found from this file: Sources/TokenGateTesting/ → repository root → Tests/Peers/google/.
    package static var scriptPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Tests/Peers/google/google_standin.py").path
    }

    /// Tests/Peers/google/executable_source.py: an executable credential source that answers as it is told.
    package static var executableSourcePath: String {
        URL(fileURLWithPath: scriptPath).deletingLastPathComponent().appendingPathComponent("executable_source.py").path
    }

    private static func start(in directory: TemporaryDirectory) async throws -> GoogleStandIn {
        let stateDirectory = "\(directory.path)/state"
        let stderrPath = "\(directory.path)/standin.stderr"
        let portPath = "\(directory.path)/standin.port"
        let mtlsPortPath = "\(directory.path)/standin.mtls-port"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        let stdin = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", scriptPath, "--state-dir", stateDirectory, "--port", "0", "--port-file", portPath,
            "--mtls-port", "0", "--mtls-port-file", mtlsPortPath, "--exit-on-stdin-eof",
            "--max-seconds", "900",
        ]
        process.standardInput = stdin
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        try process.run()
        // The ports arrive in files written whole and renamed into place (the mTLS one first): polled here with
        // the task asleep in between, so no thread (of the concurrency pool or of Dispatch, which blocking test
        // sockets may all hold) waits on the child.
        let clock = ContinuousClock()
        let deadline = clock.now + TestTiming.bound(.seconds(60))
        while clock.now < deadline {
            if let text = try? String(contentsOfFile: portPath, encoding: .utf8) {
                let mtlsText = (try? String(contentsOfFile: mtlsPortPath, encoding: .utf8)) ?? ""
                guard let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)),
                    let mtlsPort = Int(mtlsText.trimmingCharacters(in: .whitespacesAndNewlines))
                else {
                    kill(process.processIdentifier, SIGKILL)
                    throw HarnessError("the Google stand-in's port files hold no ports: \(text.prefix(40)), \(mtlsText.prefix(40))")
                }
                return GoogleStandIn(port: port, mtlsPort: mtlsPort, stateDirectory: stateDirectory, process: process, stdin: stdin)
            }
            if !process.isRunning {
                let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
                throw HarnessError("the Google stand-in exited \(process.terminationStatus) (python3 with cryptography needed):\n\(log.suffix(2000))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        kill(process.processIdentifier, SIGKILL)
        let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        throw HarnessError("the Google stand-in wrote no port within 60 s:\n\(log.suffix(2000))")
    }

    /// The CA that issued the mTLS port's server certificate and the trusted client certificates (`x509/ca.pem`):
    /// what a client of `mtlsBaseURL` must trust.
    package var caFile: String { "\(stateDirectory)/x509/ca.pem" }

    /// Closes its stdin and kills it (SIGKILL: the test process blocks SIGTERM, which children inherit), then waits.
    package func stop() async {
        try? stdin.fileHandleForWriting.close()
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        for _ in 0..<500 where process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// `POST /_control` with this JSON object; returns the state it answers. A non-200 answer throws.
    @discardableResult
    package func control(_ json: String) async throws -> JSONObject {
        try await request("POST", "/_control", body: json)
    }

    /// `GET /_control`: accounts with key-file paths, authorized users with file paths, grants, faults.
    package func state() async throws -> JSONObject {
        try await request("GET", "/_control")
    }

    /// `GET /_control/calls`: `{"calls": {kind: {"count","byStatus","byPrincipal","byTarget"}}, "log": [...]}`.
    package func calls() async throws -> JSONObject {
        try await request("GET", "/_control/calls")
    }

    /// How many calls of `kind` (metadata, token, sts, signJwt, signBlob, generateAccessToken, publicKeys) it saw.
    package func calls(kind: String) async throws -> Int {
        let counts = try await calls()["calls"]?.objectValue?[kind]?.objectValue
        return Int(counts?["count"]?.integerValue ?? 0)
    }

    /// The call log entries of `kind`, oldest first (the last 2,000 calls of every kind are kept).
    package func log(_ kind: String) async throws -> [JSONObject] {
        (try await calls()["log"]?.arrayValue ?? []).compactMap(\.objectValue).filter { $0["kind"]?.stringValue == kind }
    }

    /// How many calls of `kind` came from `principal` (as the stand-in names principals).
    package func calls(kind: String, principal: String) async throws -> Int {
        let counts = try await calls()["calls"]?.objectValue?[kind]?.objectValue
        return Int(counts?["byPrincipal"]?.objectValue?[principal]?.integerValue ?? 0)
    }

    /// The HTTP status of IAM `signJwt` for `target` called with `Authorization: Bearer <bearer>` (200: the token is
    /// one the stand-in issued, unexpired, and its principal holds Token Creator on `target`).
    package func signJwt(for target: String, bearer: String) async throws -> Int {
        var request = HTTPClientRequest(url: "\(baseURL)/v1/projects/-/serviceAccounts/\(target):signJwt")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(bearer)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"payload": "{\"sub\": \"trip-42\"}"}"#))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }

    private func request(_ method: String, _ path: String, body: String? = nil) async throws -> JSONObject {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = HTTPMethod(rawValue: method)
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let bytes = Array(try await response.body.collect(upTo: 4 << 20).readableBytesView)
        guard response.status == .ok, case .object(let object) = try JSON.parse(bytes) else {
            throw HarnessError("stand-in \(method) \(path) answered \(response.status.code): \(String(decoding: bytes.prefix(500), as: UTF8.self))")
        }
        return object
    }
}
