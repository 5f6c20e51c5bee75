import Foundation
import JOSE
import OpenSSLPrimitives
import Testing

/// The commands the docs give a newcomer to copy, read from the Markdown and run by `sh` as written, against a real
/// `tokengate serve`. Only what must differ here is rewritten: the ports (the test's server listens on free ones,
/// not 8080 and 9464) and where `tokengate` is (the build's, first on `PATH`). A doc edit that breaks a command, or
/// a change to the gateway that breaks the docs, fails here.
@Suite struct DocumentedCommandsCLITests {
    @Test func theQuickStartsTryItGetsAndChecksATokenOnTheBundledConfiguration() async throws {
        try await withCLI { cli in
            // The bundled file as it is; its keys are generated into the copy's .tokengate/.
            try cli.write("config.yaml", try DocumentedCommands.repositoryFile("config.yaml"))
            let server = try await ServeProcess.start(cli, ["--config", "config.yaml", "--port", "0"])
            let ports = DocumentedCommands.Ports(public: server.port, admin: try await server.listeningAdminPort())
            let readme = try DocumentedCommands.repositoryFile("README.md")
            let tryIt = try DocumentedCommands.shellBlock(in: readme, after: "### Try it")

            let result = try await DocumentedCommands.run(tryIt, in: cli, ports: ports)
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains(#""tokenType":"consumer","providerId":"demo-fleet","context":{"tripId":"trip-42"}"#), "\(result)")
            #expect(result.stdout.contains("verdict: valid"), "\(result)")

            // What the prose after the block says: the same token checked for another trip is refused.
            #expect(readme.contains("refused with exit status 1 and `verdict: invalid (wrong_context)`"))
            let otherTrip = try await DocumentedCommands.run(
                tryIt.replacingOccurrences(of: "--trip-id trip-42", with: "--trip-id trip-43"), in: cli, ports: ports)
            #expect(otherTrip.status == 1, "\(otherTrip)")
            #expect(otherTrip.stdout.contains("verdict: invalid (wrong_context)"), "\(otherTrip)")

            // And the operator's side: the metrics command in the prose finds the tokens counted.
            let metrics = try #require(DocumentedCommands.codeSpan(in: readme, startingWith: "curl -s http://127.0.0.1:9464/metrics"))
            let scraped = try await DocumentedCommands.run(metrics, in: cli, ports: ports)
            #expect(scraped.status == 0, "\(scraped)")
            #expect(scraped.stdout.contains(#"tokengate_tokens_served_total{provider="demo-fleet""#), "\(scraped)")
            try await server.stop()
        }
    }

    /// The HTTP API's IDs section: curl's `--data-urlencode` sends the trip `p1 space` (as `p1+space`), and the token
    /// is for `p1 space`.
    @Test func theIDsSectionsCurlGetsATokenForATripWithASpace() async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", try DocumentedCommands.repositoryFile("config.yaml"))
            let server = try await ServeProcess.start(cli, ["--config", "config.yaml", "--port", "0"])
            let ports = DocumentedCommands.Ports(public: server.port, admin: try await server.listeningAdminPort())
            let page = try DocumentedCommands.repositoryFile("docs/http-api.md")
            let block = try DocumentedCommands.shellBlock(in: page, after: "From a shell, `curl --get --data-urlencode`")
            let result = try await DocumentedCommands.run(block, in: cli, ports: ports)
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains(#""context":{"tripId":"p1 space"}"#), "\(result)")
            let token = try #require(try JSON.parse(Array(result.stdout.utf8)).objectValue?["token"]?.stringValue)
            #expect(JWTVerifier.decodeUnverified(token).claims?["authorization"] == .object(["tripid": "p1 space"]))
            try await server.stop()
        }
    }

    @Test func mintSessionsExampleGetsATokenForTheSessionsTrip() async throws {
        try await withCLI { cli in
            let page = try DocumentedCommands.repositoryFile("docs/cli.md")
            let block = try DocumentedCommands.shellBlock(in: page, after: "**`mint-session`**")
            // The block's first command makes the identity provider's key, which the configuration then names.
            let lines = block.split(separator: "\n", omittingEmptySubsequences: false)
            let keygen = try #require(lines.first { $0.hasPrefix("tokengate keygen") }).description
            let makeKey = try await DocumentedCommands.run(keygen, in: cli, ports: nil)
            #expect(makeKey.status == 0, "\(makeKey)")

            // The client entry is the block's comment (`# config.yaml:  clients: [...]`), as a reader would paste it.
            let clients = try DocumentedCommands.commentedConfiguration(in: block)
            try cli.write(
                "config.yaml",
                """
                server: { host: 127.0.0.1, port: 8080 }
                providers:
                  acme-rides:
                    backend:
                      type: static-key
                      keys:
                        consumer:
                          - serviceAccountFile: state/consumer.json
                            generateIfMissing: true
                    \(clients)
                """)
            let server = try await ServeProcess.start(cli, ["--config", "config.yaml", "--port", "0"])
            let ports = DocumentedCommands.Ports(public: server.port, admin: try await server.listeningAdminPort())

            let rest = lines.filter { !$0.hasPrefix("tokengate keygen") }.joined(separator: "\n")
            let result = try await DocumentedCommands.run(rest, in: cli, ports: ports)
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains("verdict: valid"), "\(result)")
            #expect(result.stdout.contains(#""tokenType":"consumer","providerId":"acme-rides","context":{"tripId":"trip-42"}"#), "\(result)")
            try await server.stop()
        }
    }

    /// The README's `upstream-http` example, as written, fronts the demo provider of a running `scripts/serve`: a
    /// second gateway with that provider (and an API-key client) fetches the first one's token, verifies it against
    /// the first one's key set and hands it on.
    @Test func theReadmesUpstreamExampleFrontsARunningServe() async throws {
        let apiKey = "tg_docs_key_not_a_secret_0123456789"
        try await withCLI { cli in
            try cli.write("config.yaml", try DocumentedCommands.repositoryFile("config.yaml"))
            let demo = try await ServeProcess.start(cli, ["--config", "config.yaml", "--port", "0"])
            let readme = try DocumentedCommands.repositoryFile("README.md")
            let example = try DocumentedCommands.block("yaml", in: readme, after: "### `upstream-http`")
            let export = try #require(DocumentedCommands.codeSpan(in: readme, startingWith: "export DEMO_UPSTREAM_KEY="))
            let secret = String(export.dropFirst("export DEMO_UPSTREAM_KEY=".count))
            try cli.write(
                "upstream.yaml",
                """
                server: { port: 0 }
                providers:
                \(example.replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(demo.port)"))
                    clients:
                      - { name: dispatch, type: api-key, keySha256: \(CLIFixtures.hex(try Digest.sha256(Array(apiKey.utf8)))), allow: { consumer: any } }
                """)
            let fronting = try await ServeProcess.start(cli, ["--config", "upstream.yaml"], environment: ["DEMO_UPSTREAM_KEY": secret])
            let result = try await DocumentedCommands.run(
                """
                curl -s -H "Authorization: Bearer \(apiKey)" "http://127.0.0.1:\(fronting.port)/v1/providers/demo-upstream/tokens/consumer?tripId=trip-42"
                """, in: cli, ports: nil)
            let answer = try JSON.parse(Array(result.stdout.utf8)).objectValue
            let token = try #require(answer?["token"]?.stringValue, "\(result)\n\(fronting.stderr)")
            let claims = JWTVerifier.decodeUnverified(token).claims
            #expect(claims?["authorization"] == .object(["tripid": "trip-42"]))
            #expect(claims?["iss"] == .string("tokengate-consumer@demo-fleet.iam.gserviceaccount.com"))
            try await fronting.stop()
            try await demo.stop()
        }
    }

    @Test func endingATripsCommandsEndItAndLiftIt() async throws {
        let apiKey = "tg_docs_key_not_a_secret_0123456789"
        let adminKey = "tg_docs_admin_key_not_a_secret_0123456789"
        try await withCLI { cli in
            try cli.write(
                "config.yaml",
                try CLIFixtures.staticKeyConfig(apiKey: apiKey) + """

                    adminKeys:
                      - { name: ops, keySha256: \(CLIFixtures.hex(try Digest.sha256(Array(adminKey.utf8)))) }
                    """)
            let server = try await ServeProcess.start(cli, ["--config", "config.yaml", "--port", "0"])
            let ports = DocumentedCommands.Ports(public: server.port, admin: try await server.listeningAdminPort())
            let page = try DocumentedCommands.repositoryFile("docs/operations.md")
            let block = try DocumentedCommands.shellBlock(in: page, after: "### Ending a trip, vehicle, task or shipment")
            let commands = block.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") }
            try #require(commands.count == 4, "the block's commands changed: \(commands)")

            // Each command in turn; after each, the gateway's answer for the trip shows it took effect.
            let tripToken = """
                curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer \(apiKey)" \
                  "http://127.0.0.1:8080/v1/providers/acme-rides/tokens/consumer?tripId=trip-42"
                """
            for (command, answer) in zip(commands, ["410", "200", "410", "200"]) {
                let result = try await DocumentedCommands.run(command, in: cli, ports: ports, environment: ["ADMIN_KEY": adminKey])
                #expect(result.status == 0, "\(command)\n\(result)")
                let status = try await DocumentedCommands.run(tripToken, in: cli, ports: ports)
                #expect(status.stdout == answer, "after \(command)")
            }
            try await server.stop()
        }
    }
}

/// Reading commands out of the repository's Markdown, and running them as `sh` would from a reader's terminal.
enum DocumentedCommands {
    /// The ports a command is pointed at instead of the docs' 8080 (public) and 9464 (admin).
    struct Ports {
        var `public`: Int
        var admin: Int
    }

    struct NotFound: Error, CustomStringConvertible {
        var description: String
    }

    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func repositoryFile(_ path: String) throws -> String {
        try String(contentsOf: repositoryRoot.appending(path: path), encoding: .utf8)
    }

    /// The text of the first ```` ```sh ```` block after the first line starting with `heading`.
    static func shellBlock(in page: String, after heading: String) throws -> String {
        try block("sh", in: page, after: heading)
    }

    /// The first ```` ```language ```` block after the line that starts with `heading`.
    static func block(_ language: String, in page: String, after heading: String) throws -> String {
        let lines = page.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix(heading) }) else { throw NotFound(description: "no line starts with \(heading)") }
        guard let open = lines[start...].firstIndex(where: { $0 == "```\(language)" }),
            let close = lines[(open + 1)...].firstIndex(where: { $0 == "```" })
        else { throw NotFound(description: "no \(language) block after \(heading)") }
        return lines[(open + 1)..<close].joined(separator: "\n")
    }

    /// The first code span of the page whose text starts with `prefix`.
    static func codeSpan(in page: String, startingWith prefix: String) -> String? {
        page.components(separatedBy: "`" + prefix).dropFirst().first?.split(separator: "`").first.map { prefix + $0 }
    }

    /// The YAML a block's comment gives for config.yaml (`# config.yaml:  key: …` and the comment lines after it),
    /// on one line.
    static func commentedConfiguration(in block: String) throws -> String {
        let lines = block.split(separator: "\n")
        guard let start = lines.firstIndex(where: { $0.hasPrefix("# config.yaml:") }) else {
            throw NotFound(description: "no '# config.yaml:' comment in the block")
        }
        var text = lines[start].dropFirst("# config.yaml:".count).trimmingCharacters(in: .whitespaces)
        for line in lines[(start + 1)...] {
            guard line.hasPrefix("#") else { break }
            text += " " + line.dropFirst().trimmingCharacters(in: .whitespaces)
        }
        return text
    }

    /// Runs `commands` with `sh -e` in the runner's directory, the build's `tokengate` first on `PATH` (the docs'
    /// `.build/debug/tokengate` means it too) and the docs' ports replaced by `ports`.
    static func run(_ commands: String, in cli: CLIRunner, ports: Ports?, environment: [String: String] = [:]) async throws -> CLIResult {
        let bin = cli.directory.appending(path: ".bin")
        if !FileManager.default.fileExists(atPath: bin.appending(path: "tokengate").path) {
            try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(at: bin.appending(path: "tokengate"), withDestinationURL: cli.executable)
        }
        var script = commands.replacingOccurrences(of: ".build/debug/tokengate", with: "tokengate")
        if let ports {
            script = script.replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(ports.public)")
                .replacingOccurrences(of: "127.0.0.1:9464", with: "127.0.0.1:\(ports.admin)")
                // end-context's --admin-url defaults to the docs' admin port.
                .replacingOccurrences(of: "tokengate end-context", with: "tokengate end-context --admin-url http://127.0.0.1:\(ports.admin)")
        }
        let path = bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let shell = CLIRunner(directory: cli.directory, executable: URL(fileURLWithPath: "/bin/sh"))
        return try await shell.run(["-ec", script], environment: environment.merging(["PATH": path]) { $1 })
    }
}
