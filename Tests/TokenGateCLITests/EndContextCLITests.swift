import Foundation
import JOSE
import OpenSSLPrimitives
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `tokengate end-context` against a running `tokengate serve`, through its admin listener.
@Suite struct EndContextCLITests {
    static let apiKey = "tg_cli_test_key_not_a_secret_0123456789"
    static let adminKey = "tg_cli_admin_key_not_a_secret_0123456789"

    static func configuration() throws -> String {
        try CLIFixtures.staticKeyConfig(apiKey: apiKey) + """

            adminKeys:
              - name: ops
                keySha256: \(CLIFixtures.hex(try Digest.sha256(Array(adminKey.utf8))))
            """
    }

    static func status(_ url: String) async throws -> Int {
        var request = URLRequest(url: URL(string: url)!)
        request.setValue("Bearer \(apiKey)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    @Test func endsAndLiftsATripOnARunningGateway() async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", try Self.configuration())
            let server = try await ServeProcess.start(cli, ["--config", "config.yaml", "--port", "0"])
            let adminURL = "http://127.0.0.1:\(try await server.listeningAdminPort())"
            let token = "http://127.0.0.1:\(server.port)/v1/providers/\(CLIFixtures.providerID)/tokens/consumer?tripId=t-1"
            #expect(try await Self.status(token) == 200)
            let environment = ["TOKENGATE_ADMIN_KEY": Self.adminKey]
            let command = ["end-context", "--admin-url", adminURL, "--provider", CLIFixtures.providerID, "--trip-id", "t-1"]

            let ended = try await cli.run(command, environment: environment)
            #expect(ended.status == 0, "\(ended)")
            #expect(ended.stdout.contains("consumer tripId=t-1 at \(CLIFixtures.providerID): ended until"), "\(ended)")
            #expect(ended.stdout.contains("1 cached token(s) evicted"), "\(ended)")
            #expect(try await Self.status(token) == 410)

            let lifted = try await cli.run(command + ["--lift"], environment: environment)
            #expect(lifted.status == 0, "\(lifted)")
            #expect(lifted.stdout.contains("lifted"), "\(lifted)")
            #expect(try await Self.status(token) == 200)

            // Any ID Fleet Engine takes is sent percent-encoded as one path segment: a space, a plus, a percent sign, a
            // letter of any script arrive as given; one outside the rule is a usage error naming the option and the rule.
            let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
            for id in ["p1 space", "a+b%c", "caf\u{E9} \u{1F695}"] {
                let query = try #require(id.addingPercentEncoding(withAllowedCharacters: unreserved))
                let url = "http://127.0.0.1:\(server.port)/v1/providers/\(CLIFixtures.providerID)/tokens/consumer?tripId=\(query)"
                #expect(try await Self.status(url) == 200)
                let endedID = try await cli.run(
                    ["end-context", "--admin-url", adminURL, "--provider", CLIFixtures.providerID, "--trip-id", id], environment: environment)
                #expect(endedID.status == 0, "\(endedID)")
                #expect(endedID.stdout.contains("consumer tripId=\(id) at \(CLIFixtures.providerID): ended until"), "\(endedID)")
                #expect(try await Self.status(url) == 410, "\(id)")
            }
            let outside = try await cli.run(
                ["end-context", "--admin-url", adminURL, "--provider", CLIFixtures.providerID, "--trip-id", "a/b"], environment: environment)
            #expect(outside.status == 2 && outside.stderr.contains("--trip-id contains '/', ':', '?', ',' or '#'"), "\(outside)")

            // A wrong key: the gateway's code, status 3; no key at all: a usage error, status 2; nobody there: 4.
            let refused = try await cli.run(command, environment: ["TOKENGATE_ADMIN_KEY": "not-the-key"])
            #expect(refused.status == 3, "\(refused)")
            #expect(refused.stderr.contains("the gateway refused: unauthenticated"), "\(refused)")
            let noKey = try await cli.run(command, environment: ["TOKENGATE_ADMIN_KEY": ""])
            #expect(noKey.status == 2, "\(noKey)")
            #expect(noKey.stderr.contains("TOKENGATE_ADMIN_KEY"), "\(noKey)")
            #expect(try await server.stop() == 0)
            // Nobody there: a port held bound and not listening (the stopped gateway's port may be another test's
            // gateway's by now: a loaded CI run got that one's 404).
            let nobody = try PortHolder(listening: false)
            defer { nobody.close() }
            let nowhere = ["end-context", "--admin-url", "http://127.0.0.1:\(nobody.port)", "--provider", CLIFixtures.providerID, "--trip-id", "t-1"]
            let gone = try await cli.run(nowhere + ["--timeout", "5"], environment: environment)
            #expect(gone.status == 4, "\(gone)")
            #expect(gone.stderr.contains("no answer from http://127.0.0.1:\(nobody.port)"), "\(gone)")
            #expect(!(ended.output + refused.output + gone.output).contains(Self.adminKey))
        }
    }
}
