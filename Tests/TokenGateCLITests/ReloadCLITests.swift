import Foundation
import JOSE
import Testing
import TokenGateTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `tokengate serve --pid-file` and `tokengate reload`: a real process reloads on SIGHUP, keeps serving when the
/// new file is broken, and removes its pid file when it stops.
@Suite(.timeLimit(.minutes(5))) struct ReloadCLITests {
    static let apiKey = "tg_reload_cli_key_0123456789"

    @Test func sighupReloadsTheRunningGatewayAndABrokenFileChangesNothing() async throws {
        try await withCLI { cli in
            let config = try CLIFixtures.staticKeyConfig(apiKey: Self.apiKey).replacingOccurrences(of: "port: 8080", with: "port: 0")
            try cli.write("config.yaml", config)
            let server = try await ServeProcess.start(cli, ["--config", "config.yaml", "--pid-file", "gateway.pid"])
            // The generation is on the admin listener's /readyz (the public one says only whether it is ready).
            let port = try await server.listeningAdminPort()
            #expect(try await Self.generation(port) == 1)
            let pid = try #require(
                Int32(String(decoding: try cli.read("gateway.pid"), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(pid == server.pid)

            // A new client, then SIGHUP through `tokengate reload`.
            try cli.write(
                "config.yaml",
                config.replacingOccurrences(
                    of: "    clients:\n",
                    with:
                        "    clients:\n      - { name: added, type: api-key, keySha256: \(String(repeating: "cd", count: 32)), allow: { consumer: any } }\n"
                ))
            let reload = try await cli.run(["reload", "--pid-file", "gateway.pid"])
            #expect(reload.status == 0, "\(reload)")
            #expect(try await Self.waitForGeneration(2, port: port))

            // A broken file: the reload is refused, the gateway keeps serving generation 2 and says why.
            try cli.write("config.yaml", "providers:\n  acme-rides: [\n")
            #expect(try await cli.run(["reload", "--pid-file", "gateway.pid"]).status == 0)
            #expect(try await server.waitForStderr(containing: "configuration not reloaded"))
            #expect(try await Self.generation(port) == 2)
            #expect(server.stderr.contains("config.yaml:"))

            #expect(try await server.stop() == 0)
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
        try await eventually { try await generation(port) == number }
    }
}
