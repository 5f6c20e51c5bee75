import Foundation
import JOSE
import OpenSSLPrimitives
import Testing

/// `check-config`, `mint` and `verify-token --config --provider` on a static-key configuration, end to end.
@Suite struct MintAndVerifyCLITests {
    static let apiKey = "tg_cli_test_key_not_a_secret_0123456789"
    static let provider = ["--config", "config.yaml", "--provider", CLIFixtures.providerID]

    /// Writes a working configuration and mints a consumer token for trip t-1 with it.
    static func mintTripToken(_ cli: CLIRunner) async throws -> String {
        try cli.write("config.yaml", try CLIFixtures.staticKeyConfig(apiKey: apiKey))
        let minted = try await cli.run(["mint"] + provider + ["--type", "consumer", "--trip-id", "t-1"])
        try #require(minted.status == 0, "mint failed:\n\(minted)")
        return minted.stdout.trimmingCharacters(in: .newlines)
    }

    @Test func checkConfigAcceptsAWorkingConfigurationAndSummarisesIt() async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", try CLIFixtures.staticKeyConfig(apiKey: Self.apiKey))
            let result = try await cli.run(["check-config", "config.yaml"])
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains("config.yaml: OK"))
            #expect(result.stdout.contains("server: http://127.0.0.1:8080"))
            #expect(result.stdout.contains("provider acme-rides"))
            #expect(result.stdout.contains("static-key (consumer)"))
            #expect(result.stdout.contains("backend (api-key: consumer)"))
            // The key was generated on load, owner-only.
            let attributes = try FileManager.default.attributesOfItem(atPath: cli.path("state/consumer.json"))
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
        }
    }

    @Test func checkConfigNeverPrintsTheAPIKeyOrItsDigest() async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", try CLIFixtures.staticKeyConfig(apiKey: Self.apiKey))
            let result = try await cli.run(["check-config", "config.yaml"])
            #expect(result.status == 0, "\(result)")
            #expect(!result.output.contains(Self.apiKey))
            #expect(!result.output.contains(CLIFixtures.hex(try Digest.sha256(Array(Self.apiKey.utf8)))))
            #expect(!result.output.contains("BEGIN"))
        }
    }

    @Test func mintPrintsOnlyAnRS256TokenScopedToTheTrip() async throws {
        try await withCLI { cli in
            let token = try await Self.mintTripToken(cli)
            #expect(!token.contains("\n"), "mint must print the token alone")
            #expect(token.split(separator: ".", omittingEmptySubsequences: false).count == 3)
            let decoded = JWTVerifier.decodeUnverified(token)
            let header = try #require(decoded.header)
            let claims = try #require(decoded.claims)
            #expect(header["alg"] == "RS256")
            #expect(header["kid"]?.stringValue?.isEmpty == false)
            #expect(claims["aud"] == .string(CLIFixtures.audience))
            #expect(claims["authorization"] == .object(["tripid": "t-1"]))
            let lifetime = try #require(claims["exp"]?.integerValue) - (try #require(claims["iat"]?.integerValue))
            #expect(lifetime == 3600)
        }
    }

    /// `mint` and `verify-token` take any ID Fleet Engine takes, as given, and refuse one that breaks its rule
    /// naming the option and the rule.
    @Test func mintAndVerifyTakeFleetEnginesIDsAsGiven() async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", try CLIFixtures.staticKeyConfig(apiKey: Self.apiKey))
            for id in ["p1 space", "a+b%c&d=e", "caf\u{E9} \u{1F695}"] {
                let minted = try await cli.run(["mint"] + Self.provider + ["--trip-id", id])
                #expect(minted.status == 0, "\(minted)")
                let token = minted.stdout.trimmingCharacters(in: .newlines)
                let claim = JWTVerifier.decodeUnverified(token).claims?["authorization"]?.objectValue?["tripid"]?.stringValue
                #expect(claim?.utf8.elementsEqual(id.utf8) == true, "\(id)")
                let verified = try await cli.run(["verify-token", token] + Self.provider + ["--trip-id", id])
                #expect(verified.status == 0 && verified.stdout.contains("verdict: valid"), "\(verified)")
            }
            for (id, rule) in [("a/b", "contains '/', ':', '?', ',' or '#'"), ("cafe\u{301}", "is not in Unicode Normalization Form C")] {
                let refused = try await cli.run(["mint"] + Self.provider + ["--trip-id", id])
                #expect(refused.status == 2, "\(refused)")
                #expect(refused.stderr.contains("--trip-id \(rule)"), "\(refused)")
            }
        }
    }

    struct Scenario: Sendable, CustomTestStringConvertible {
        let scope: [String]
        /// nil: valid.
        let reason: String?
        var testDescription: String { "\(scope.isEmpty ? "(the token's own scope)" : scope.joined(separator: " ")) → \(reason ?? "valid")" }
    }

    static let scenarios: [Scenario] = [
        Scenario(scope: ["--type", "consumer", "--trip-id", "t-1"], reason: nil),
        Scenario(scope: ["--trip-id", "t-1"], reason: nil),
        Scenario(scope: [], reason: nil),
        Scenario(scope: ["--type", "consumer", "--trip-id", "t-2"], reason: "wrong_context"),
        Scenario(scope: ["--trip-id", "t-2"], reason: "wrong_context"),
        Scenario(scope: ["--type", "delivery-consumer", "--tracking-id", "t-1"], reason: "wrong_context"),
        Scenario(scope: ["--vehicle-id", "v-1"], reason: "wrong_context"),
    ]

    @Test(arguments: scenarios)
    func verifyTokenJudgesAMintedTokenAsTheGatewayDoes(_ scenario: Scenario) async throws {
        try await withCLI { cli in
            let token = try await Self.mintTripToken(cli)
            let text = try await cli.run(["verify-token", token] + Self.provider + scenario.scope)
            let json = try await cli.run(["verify-token", token, "--json"] + Self.provider + scenario.scope)
            let verdict = try CLIFixtures.verdict(json)
            if let reason = scenario.reason {
                #expect(text.status == 1, "\(text)")
                #expect(text.stdout.contains("verdict: invalid (\(reason))"), "\(text)")
                #expect(text.stderr.contains("token rejected: \(reason)"), "\(text)")
                #expect(json.status == 1, "\(json)")
                #expect(verdict["valid"] == false)
                #expect(verdict["reason"] == .string(reason))
            } else {
                #expect(text.status == 0, "\(text)")
                #expect(text.stdout.contains("verdict: valid"), "\(text)")
                #expect(json.status == 0, "\(json)")
                #expect(verdict["valid"] == true)
                #expect(verdict["reason"] == nil)
            }
            #expect(verdict["claims"]?.objectValue?["authorization"] == .object(["tripid": "t-1"]))
        }
    }

    @Test(arguments: [["verify-token", "-"], ["verify-token"]])
    func verifyTokenReadsTheTokenFromStandardInput(_ command: [String]) async throws {
        try await withCLI { cli in
            let token = try await Self.mintTripToken(cli)
            let result = try await cli.run(command + Self.provider + ["--trip-id", "t-1"], stdin: token + "\n")
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains("verdict: valid"))
        }
    }

    @Test func verifyTokenAcceptsAMintedTokenAgainstTheServiceAccountFileWithoutPrintingItsKey() async throws {
        try await withCLI { cli in
            let token = try await Self.mintTripToken(cli)
            let issuer = "tokengate-consumer@acme-rides.iam.gserviceaccount.com"
            let strict = ["--require-kid", "--alg", "RS256", "--audience", CLIFixtures.audience, "--max-lifetime", "3600"]
            let accepted = try await cli.run(["verify-token", token, "--key", "state/consumer.json", "--issuer", issuer] + strict)
            #expect(accepted.status == 0, "\(accepted)")
            #expect(accepted.stdout.contains("verdict: valid"))
            #expect(!accepted.output.contains("BEGIN"))
            let otherIssuer = try await cli.run(["verify-token", token, "--key", "state/consumer.json", "--issuer", "x@y.z", "--json"])
            #expect(otherIssuer.status == 1, "\(otherIssuer)")
            #expect(try CLIFixtures.verdict(otherIssuer)["reason"] == "wrong_issuer")
        }
    }

    @Test func verifyTokenJudgesAtTheGivenTime() async throws {
        try await withCLI { cli in
            let token = try await Self.mintTripToken(cli)
            let claims = try #require(JWTVerifier.decodeUnverified(token).claims)
            let expiresAt = try #require(claims["exp"]?.integerValue)
            // The gateway hands out nothing with under 5 minutes left, nor anything past exp + 60 s leeway.
            let cases: [(now: Int64, reason: String)] = [
                (expiresAt - 60, "insufficient_lifetime"),
                (expiresAt + 120, "expired"),
            ]
            for (now, reason) in cases {
                let result = try await cli.run(["verify-token", token, "--json", "--now", "\(now)", "--trip-id", "t-1"] + Self.provider)
                #expect(result.status == 1, "\(result)")
                #expect(try CLIFixtures.verdict(result)["reason"] == .string(reason))
            }
        }
    }
}
