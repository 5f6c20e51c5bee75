import Foundation
import JOSE
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A real `tokengate serve` as an operator runs it: JSON logs, an audit file whose fingerprints `verify-token`
/// prints too, and `/metrics` on the admin port only.
@Suite(.timeLimit(.minutes(5))) struct OperationsCLITests {
    static let apiKey = "tg_operations_cli_key_0123456789"

    static func configuration() throws -> String {
        try CLIFixtures.staticKeyConfig(apiKey: apiKey)
            .replacingOccurrences(of: "  port: 8080\n", with: "  port: 0\n  logFormat: json\n  logLevel: info\n")
            + "\naudit:\n  path: audit.jsonl\n"
    }

    static func get(_ url: String, bearer: String? = nil) async throws -> (status: Int, body: [UInt8]) {
        var request = URLRequest(url: URL(string: url)!)
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, Array(data))
    }

    @Test func theAuditFingerprintIsTheOneVerifyTokenPrintsAndLogsAreJSONLines() async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", try Self.configuration())
            let server = try await ServeProcess.start(cli, ["--config", "config.yaml"])
            let base = "http://127.0.0.1:\(server.port)"
            let path = "/v1/providers/\(CLIFixtures.providerID)/tokens/consumer?tripId=t-1"
            let first = try await Self.get(base + path, bearer: Self.apiKey)
            #expect(first.status == 200)
            #expect(try await Self.get(base + path, bearer: Self.apiKey).status == 200)  // a cache hit: no audit line
            let token = try #require(try JSON.parse(first.body).objectValue?["token"]?.stringValue)

            let audit = String(decoding: try cli.read("audit.jsonl"), as: UTF8.self)
            let lines = audit.split(separator: "\n")
            #expect(lines.count == 1, "\(audit)")
            #expect(!audit.contains(token))
            let line = try #require(try JSON.parse(Array(lines[0].utf8)).objectValue)
            let fingerprint = try #require(line["fingerprint"]?.stringValue)

            let verified = try await cli.run([
                "verify-token", token, "--config", "config.yaml", "--provider", CLIFixtures.providerID, "--trip-id", "t-1",
            ])
            #expect(verified.status == 0, "\(verified)")
            #expect(verified.stdout.contains("fingerprint: \(fingerprint)"), "\(verified)")

            // The metrics are on the admin port, which `serve` names on standard output; never on the public one.
            #expect(try await Self.get(base + "/metrics").status == 404)
            let adminPort = try await server.listeningAdminPort()
            let metrics = try await Self.get("http://127.0.0.1:\(adminPort)/metrics")
            #expect(metrics.status == 200)
            let text = String(decoding: metrics.body, as: UTF8.self)
            #expect(
                text.contains(#"tokengate_tokens_served_total{provider="\#(CLIFixtures.providerID)",token_type="consumer",cache="hit"} 1"#), "\(text)"
            )

            #expect(try await server.stop() == 0)
            let logLines = server.stderr.split(separator: "\n")
            #expect(logLines.count >= 2)
            for logLine in logLines {
                let object = try #require(try? JSON.parse(Array(logLine.utf8)).objectValue, "not a JSON object: \(logLine)")
                #expect(object["level"]?.stringValue != nil)
                #expect(object["message"]?.stringValue != nil)
                #expect(object["time"]?.stringValue?.hasSuffix("Z") == true)
            }
            #expect(logLines.contains { $0.contains(#""message":"provider loaded""#) && $0.contains(#""provider":"\#(CLIFixtures.providerID)""#) })
            #expect(!server.stderr.contains(token))
        }
    }
}
