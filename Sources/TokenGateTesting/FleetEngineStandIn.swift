import AsyncHTTPClient
import Foundation
package import JOSE
import NIOCore
import NIOHTTP1

/// The Fleet Engine stand-in (`Tests/Peers/fleetengine/fleet_engine_standin.py`) on a loopback port, started for one
/// test and stopped after it, even when the test throws. It serves Fleet Engine's REST surface
/// (`/v1/providers/{project}/trips|vehicles|deliveryVehicles|tasks|taskTrackingInfo/…`) and admits a call only as
/// Fleet Engine documents: an RS256 token whose `kid` is among the published keys of the service account named by
/// `iss` (= `sub`), fetched from the JWKS URL the test registers for that account (the gateway's
/// `/v1/providers/{id}/jwks.json` or the Google stand-in's `/service_accounts/v1/jwk/{email}`); `aud`
/// `https://fleetengine.googleapis.com/`; `iat`/`exp` within an hour and ten minutes of skew; a role granting the call
/// in the project of the URL; and an `authorization` claim covering the resource. It answers 401, 403, then 404 for a
/// missing resource (so 404 means "authenticated and authorised"), and records every call with its verdict
/// (`ok`, `not_found`, `role`, `claim`, `expired`, `bad_signature`, …) in ``calls()``. Set it up with ``control(_:)``
/// (accounts, roles per project, seeded resources, clock offset, faults); the script's docstring is the reference.
package final class FleetEngineStandIn: Sendable {
    /// `http://127.0.0.1:PORT`: stands for `https://fleetengine.googleapis.com`.
    package let baseURL: String
    /// The loopback port.
    package let port: Int
    private let process: Process
    // The write end of the stand-in's stdin: it stops by itself when this closes (--exit-on-stdin-eof), so a test
    // process that dies without `stop()` leaves no stand-in behind.
    private let stdin: Pipe

    /// One answer of the Fleet Engine API: the HTTP status, the stand-in's verdict (`X-Standin-Verdict`) and the
    /// JSON body (a resource, or Google's `{"error": {"code", "message", "status"}}`).
    package struct Answer: Sendable {
        package let status: Int
        package let verdict: String?
        package let body: JSONObject?
    }

    private init(port: Int, process: Process, stdin: Pipe) {
        self.port = port
        self.baseURL = "http://127.0.0.1:\(port)"
        self.process = process
        self.stdin = stdin
    }

    /// At most this many stand-ins run at once in one test process (each is a Python process).
    private static let running = TestSlots(3)

    /// Starts a stand-in, runs `body`, stops it whatever happens. Waits for one of the few stand-in slots first.
    package static func with<Result>(_ body: (FleetEngineStandIn) async throws -> Result) async throws -> Result {
        try await running.withSlot { try await run(body) }
    }

    private static func run<Result>(_ body: (FleetEngineStandIn) async throws -> Result) async throws -> Result {
        let directory = try TemporaryDirectory(prefix: "fleet-engine-standin")
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

    /// The script, found from this file: Sources/TokenGateTesting/ → repository root → Tests/Peers/fleetengine/.
    package static var scriptPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Tests/Peers/fleetengine/fleet_engine_standin.py").path
    }

    private static func start(in directory: TemporaryDirectory) async throws -> FleetEngineStandIn {
        let stderrPath = "\(directory.path)/standin.stderr"
        let portPath = "\(directory.path)/standin.port"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        let stdin = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", scriptPath, "--port", "0", "--port-file", portPath, "--exit-on-stdin-eof", "--max-seconds", "900",
        ]
        process.standardInput = stdin
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        try process.run()
        // The port arrives in a file written whole and renamed into place: polled with the task asleep in between,
        // so no thread waits on the child.
        let clock = ContinuousClock()
        let deadline = clock.now + TestTiming.bound(.seconds(60))
        while clock.now < deadline {
            if let text = try? String(contentsOfFile: portPath, encoding: .utf8) {
                guard let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                    kill(process.processIdentifier, SIGKILL)
                    throw HarnessError("the Fleet Engine stand-in's port file holds no port: \(text.prefix(40))")
                }
                return FleetEngineStandIn(port: port, process: process, stdin: stdin)
            }
            if !process.isRunning {
                let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
                throw HarnessError(
                    "the Fleet Engine stand-in exited \(process.terminationStatus) (python3 with cryptography needed):\n\(log.suffix(2000))"
                )
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        kill(process.processIdentifier, SIGKILL)
        let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        throw HarnessError("the Fleet Engine stand-in wrote no port within 60 s:\n\(log.suffix(2000))")
    }

    /// Closes its stdin and kills it (SIGKILL: the test process blocks SIGTERM, which children inherit), then waits.
    package func stop() async {
        try? stdin.fileHandleForWriting.close()
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        for _ in 0..<500 where process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// `POST /_control` with this JSON object text (`accounts`, `roles`, `trips`, `vehicles`, `deliveryVehicles`,
    /// `tasks`, `reset`, `clockOffsetSec`, `jwksRefetchMinSec`, `fault`); returns the state it answers. A non-200
    /// answer (an unknown key or role, a JWKS URL off loopback, …) throws.
    @discardableResult
    package func control(_ json: String) async throws -> JSONObject {
        try await request("POST", "/_control", body: json)
    }

    /// `POST /_control` with this JSON object.
    @discardableResult
    package func control(_ object: JSONObject) async throws -> JSONObject {
        try await control(String(decoding: JSON.serialize(.object(object)), as: UTF8.self))
    }

    /// `GET /_control`: accounts (with `fetches`, `cachedKids`), roles per project, resources, clock offset, fault.
    package func state() async throws -> JSONObject {
        try await request("GET", "/_control")
    }

    /// `GET /_calls`: every API call so far, oldest first, each `{"seq", "t", "method", "path", "rpc", "project",
    /// "status", "verdict", "detail", "account", "kid", "permissions"}` (the last 5000).
    package func calls() async throws -> [JSONObject] {
        let answer = try await request("GET", "/_calls")
        return answer["calls"]?.arrayValue?.compactMap(\.objectValue) ?? []
    }

    /// The verdict of every API call so far, oldest first (`ok`, `not_found`, `role`, `claim`, `expired`, …).
    package func verdicts() async throws -> [String] {
        try await calls().compactMap { $0["verdict"]?.stringValue }
    }

    /// The URL of `path` (`trips/T1`, `taskTrackingInfo/TR1`, `vehicles/V1?updateMask=lastLocation`, …) in `project`.
    package func url(project: String, _ path: String) -> String {
        "\(baseURL)/v1/providers/\(project)/\(path)"
    }

    /// Calls the Fleet Engine API as an app would: `Authorization: Bearer <token>` when a token is given.
    package func call(_ method: String = "GET", project: String, _ path: String, token: String?, body: String? = nil)
        async throws -> Answer
    {
        var request = HTTPClientRequest(url: url(project: project, path))
        request.method = HTTPMethod(rawValue: method)
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let bytes = Array(try await response.body.collect(upTo: 4 << 20).readableBytesView)
        let object = bytes.isEmpty ? nil : (try? JSON.parse(bytes))?.objectValue
        return Answer(
            status: Int(response.status.code),
            verdict: response.headers.first(name: "X-Standin-Verdict"),
            body: object
        )
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
            throw HarnessError(
                "Fleet Engine stand-in \(method) \(path) answered \(response.status.code): \(String(decoding: bytes.prefix(500), as: UTF8.self))"
            )
        }
        return object
    }
}
