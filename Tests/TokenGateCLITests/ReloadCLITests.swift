import Foundation
import JOSE
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `tokengate serve --pid-file` and `tokengate reload`: a real process reloads on SIGHUP, keeps serving when the
/// new file is broken, and removes its pid file when it stops.
@Suite(.timeLimit(.minutes(2))) struct ReloadCLITests {
    static let apiKey = "tg_reload_cli_key_0123456789"

    @Test func sighupReloadsTheRunningGatewayAndABrokenFileChangesNothing() async throws {
        try await withCLI { cli in
            let config = try CLIFixtures.staticKeyConfig(apiKey: Self.apiKey).replacingOccurrences(of: "port: 8080", with: "port: 0")
            try cli.write("config.yaml", config)
            let server = try ServerProcess(cli: cli, arguments: ["serve", "--config", "config.yaml", "--pid-file", "gateway.pid"])
            defer { server.stop() }
            let port = try await server.port()
            #expect(try await Self.generation(port) == 1)
            let pid = try #require(Int32(String(decoding: try cli.read("gateway.pid"), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(pid == server.process.processIdentifier)

            // A new client, then SIGHUP through `tokengate reload`.
            try cli.write("config.yaml", config.replacingOccurrences(of: "    clients:\n", with: "    clients:\n      - { name: added, type: api-key, keySha256: \(String(repeating: "cd", count: 32)), allow: { consumer: any } }\n"))
            let reload = try await cli.run(["reload", "--pid-file", "gateway.pid"])
            #expect(reload.status == 0, "\(reload)")
            #expect(try await Self.waitForGeneration(2, port: port))

            // A broken file: the reload is refused, the gateway keeps serving generation 2 and says why.
            try cli.write("config.yaml", "providers:\n  acme-rides: [\n")
            #expect(try await cli.run(["reload", "--pid-file", "gateway.pid"]).status == 0)
            #expect(try await server.waitForLog("configuration not reloaded"))
            #expect(try await Self.generation(port) == 2)
            #expect(server.log.contains("config.yaml:"))

            server.process.terminate()
            server.process.waitUntilExit()
            #expect(server.process.terminationStatus == 0)
            #expect(!FileManager.default.fileExists(atPath: cli.directory.appending(path: "gateway.pid").path))
        }
    }

    @Test func reloadWithoutAPidFileExplainsWhatToDo() async throws {
        try await withCLI { cli in
            let result = try await cli.run(["reload", "--pid-file", "nowhere.pid"])
            #expect(result.status == 2)
            #expect(result.stderr.contains("no such pid file"))
            #expect(result.stderr.contains("--pid-file"))
        }
    }

    static func generation(_ port: Int) async throws -> Int64? {
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/readyz")!)
        guard case .object(let body) = try JSON.parse(Array(data)), case .integer(let number)? = body["generation"] else { return nil }
        return number
    }

    static func waitForGeneration(_ number: Int64, port: Int) async throws -> Bool {
        for _ in 0..<400 {
            if try await generation(port) == number { return true }
            try await Task.sleep(for: .milliseconds(25))
        }
        return false
    }
}

/// `tokengate serve` as a child process, its standard output and error kept in files.
final class ServerProcess: @unchecked Sendable {
    let process = Process()
    private let outURL: URL
    private let errURL: URL

    init(cli: CLIRunner, arguments: [String]) throws {
        outURL = cli.directory.appending(path: "serve.out")
        errURL = cli.directory.appending(path: "serve.err")
        for url in [outURL, errURL] { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        process.executableURL = cli.executable
        process.arguments = arguments
        process.currentDirectoryURL = cli.directory
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var log: String { (try? String(contentsOf: errURL, encoding: .utf8)) ?? "" }

    /// The port from the "listening on" line, waiting for it (bounded).
    func port() async throws -> Int {
        for _ in 0..<600 {
            let out = (try? String(contentsOf: outURL, encoding: .utf8)) ?? ""
            if let range = out.range(of: "listening on http://127.0.0.1:"),
                let port = Int(out[range.upperBound...].prefix { $0.isNumber })
            {
                return port
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("serve did not report its port: \(log)")
        throw CancellationError()
    }

    func waitForLog(_ text: String) async throws -> Bool {
        for _ in 0..<400 {
            if log.contains(text) { return true }
            try await Task.sleep(for: .milliseconds(25))
        }
        return false
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}
