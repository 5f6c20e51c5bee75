import Foundation
import Testing

/// Bad arguments exit 2 with a message and nothing on standard output; help and version exit 0.
@Suite struct UsageCLITests {
    struct Misuse: Sendable, CustomTestStringConvertible {
        let arguments: [String]
        /// A phrase of the message on standard error.
        let message: String
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let provider = MintAndVerifyCLITests.provider

    static let misuses: [Misuse] = [
        Misuse(arguments: ["check-config", "--bogus"], message: "--bogus"),
        Misuse(arguments: ["verify-token", "a.b.c", "--bogus"], message: "--bogus"),
        Misuse(arguments: ["frobnicate"], message: "frobnicate"),
        Misuse(arguments: ["verify-token", "a.b.c", "--leeway", "soon"], message: "soon"),
        Misuse(arguments: ["mint"] + provider + ["--type", "driver", "--trip-id", "t-1"], message: "--vehicle-id"),
        Misuse(arguments: ["verify-token", "a.b.c"] + provider + ["--type", "driver", "--trip-id", "t-1"], message: "--vehicle-id"),
        Misuse(arguments: ["mint"] + provider + ["--type", "taxi", "--trip-id", "t-1"], message: "unknown --type 'taxi'"),
        Misuse(arguments: ["mint"] + provider, message: "give --type, or the ID options of one type"),
        Misuse(arguments: ["mint"] + provider + ["--vehicle-id", "v-1"], message: "no signing key is configured for driver tokens"),
        Misuse(arguments: ["mint"] + provider + ["--trip-id", "t-1", "--vehicle-id", "v-1"], message: "give --type, or the ID options of one type"),
        Misuse(
            arguments: ["mint", "--config", "config.yaml", "--provider", "other-fleet", "--trip-id", "t-1"],
            message: "no provider 'other-fleet'; it declares: acme-rides"),
        Misuse(arguments: ["verify-token", "a.b.c"], message: "give --key FILE"),
        Misuse(arguments: ["verify-token"], message: "no token given"),
        Misuse(arguments: ["verify-token", "a.b.c", "--key", "missing.jwk.json"], message: "missing.jwk.json"),
        Misuse(arguments: ["verify-token", "a.b.c", "--key", "config.yaml"], message: "config.yaml"),
        Misuse(arguments: ["verify-token", "a.b.c", "--key", "key.jwk.json"] + provider, message: "--key cannot be combined with --provider"),
        Misuse(arguments: ["verify-token", "a.b.c", "--key", "key.jwk.json", "--trip-id", "t-1"], message: "need --provider"),
        Misuse(arguments: ["verify-token", "a.b.c", "--key", "key.jwk.json", "--alg", "none"], message: "unknown --alg 'none'"),
    ]

    @Test(arguments: misuses)
    func misuseExits2WithAMessage(_ misuse: Misuse) async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", try CLIFixtures.staticKeyConfig(apiKey: MintAndVerifyCLITests.apiKey))
            try TokenKit.shared.writePublicKeys(into: cli)
            let result = try await cli.run(misuse.arguments)
            #expect(result.status == 2, "\(result)")
            #expect(result.stdout.isEmpty, "\(result)")
            #expect(result.stderr.contains(misuse.message), "\(result)")
        }
    }

    @Test(arguments: [
        (["--help"], "check-config"), (["verify-token", "--help"], "Exit status: 0 valid, 1 invalid"),
        (["--version"], "0.1.0"),
    ])
    func helpAndVersionExit0(_ arguments: [String], _ phrase: String) async throws {
        try await withCLI { cli in
            let result = try await cli.run(arguments)
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains(phrase), "\(result)")
        }
    }
}
