import Foundation
import JOSE
import Testing
import TokenGateTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `tokengate serve` with `sharedState:`: two processes on one real redis-server share their tokens.
@Suite(.timeLimit(.minutes(5)))
struct SharedStateCLITests {
    static let apiKey = "tg_cli_test_key_not_a_secret_0123456789"

    static func configuration(redisPort: Int) throws -> String {
        try CLIFixtures.staticKeyConfig(apiKey: apiKey) + """

            sharedState:
              redis:
                url: redis://:not-a-real-password@127.0.0.1:\(redisPort)/0
                timeout: 2s
              encryptionKey: \(Data(repeating: 9, count: 32).base64EncodedString())
              replicas: 2
            """
    }

    static func get(_ url: String, bearer: String? = apiKey) async throws -> (status: Int, body: String) {
        var request = URLRequest(url: URL(string: url)!)
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    @Test func twoServeProcessesOnOneRedisMintATripOnce() async throws {
        try await RedisServer.with(.init(password: "not-a-real-password")) { redis in
            try await withCLI { cli in
                try cli.write("config.yaml", try Self.configuration(redisPort: redis.port))
                let check = try await cli.run(["check-config", "config.yaml"])
                #expect(check.status == 0, "\(check.stderr)")
                #expect(check.stdout.contains("shared state: redis://:redacted@127.0.0.1:\(redis.port)/0, 2 replicas"))
                #expect(!check.stdout.contains("not-a-real-password"))

                let first = try await ServeProcess.start(cli, ["--config", "config.yaml", "--port", "0"])
                let second = try await ServeProcess.start(cli, ["--config", "config.yaml", "--port", "0"])
                let adminPorts = [try await first.listeningAdminPort(), try await second.listeningAdminPort()]
                let path = "/v1/providers/\(CLIFixtures.providerID)/tokens/consumer?tripId=t-shared"
                let fromFirst = try await Self.get("http://127.0.0.1:\(first.port)\(path)")
                let fromSecond = try await Self.get("http://127.0.0.1:\(second.port)\(path)")
                #expect(fromFirst.status == 200 && fromSecond.status == 200)
                // The same token (expiresIn may differ by the second between the two answers).
                func token(_ body: String) throws -> String? {
                    guard case .object(let object) = try JSON.parse(Array(body.utf8)) else { return nil }
                    return object["token"]?.stringValue
                }
                #expect(try token(fromFirst.body) != nil)
                #expect(try token(fromFirst.body) == token(fromSecond.body))
                var calls = 0.0
                for adminPort in adminPorts {
                    let metrics = try await Self.get("http://127.0.0.1:\(adminPort)/metrics", bearer: nil).body
                    calls +=
                        MetricsScrape(metrics)["tokengate_backend_calls_total", ["provider": CLIFixtures.providerID, "token_type": "consumer"]] ?? 0
                    #expect(MetricsScrape(metrics)["tokengate_shared_state_up"] == 1)
                }
                #expect(calls == 1)
                #expect(first.stderr.contains("sharing tokens, mint locks, rate limits and ended contexts on Redis"))
                #expect(!first.stderr.contains("not-a-real-password"))
                #expect(try await first.stop() == 0)
                #expect(try await second.stop() == 0)
            }
        }
    }
}
