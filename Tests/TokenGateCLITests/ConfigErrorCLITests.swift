import Foundation
import Testing

/// A broken `config.yaml` exits 2 with `file:line:column: key: message`; so do bad arguments.
@Suite struct ConfigErrorCLITests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        /// Turns the working configuration into the broken one.
        let edit: @Sendable (String) -> String
        /// The start of the message after "tokengate: ", e.g. `config.yaml:3:9: server.port: `.
        let location: String
        /// A phrase of the message.
        let message: String
        var testDescription: String { name }
    }

    static func replacing(_ old: String, with new: String) -> @Sendable (String) -> String {
        { text in
            precondition(text.contains(old), "the fixture no longer holds \(old)")
            return text.replacingOccurrences(of: old, with: new)
        }
    }

    // Lines of the working configuration (CLIFixtures.staticKeyConfig), for reading the marks below:
    //  2   host: 127.0.0.1          8       tokenLifetime: 1h                    13     clients:
    //  3   port: 8080               11           - serviceAccountFile: state/…   16         keySha256: …
    //  5   acme-rides:              12             generateIfMissing: true       17         allow: { consumer: any }
    static let cases: [Case] = [
        Case(
            name: "a quoted port", edit: replacing("port: 8080", with: #"port: "8080""#),
            location: "config.yaml:3:9: server.port: ", message: "integer"),
        Case(
            name: "an unknown key", edit: replacing("  host: 127.0.0.1", with: "  hots: 127.0.0.1"),
            location: "config.yaml:2:3: server", message: "hots"),
        Case(
            name: "a missing service-account file", edit: replacing("            generateIfMissing: true\n", with: ""),
            location: "config.yaml:11:33: providers.acme-rides.backend.keys.consumer[0].serviceAccountFile: ",
            message: "state/consumer.json"),
        Case(
            name: "a duplicate key", edit: { $0 + "\nserver:\n  port: 9090\n" },
            location: "config.yaml:18:1: ", message: "duplicate key 'server'"),
        Case(
            name: "an alias", edit: replacing("  host: 127.0.0.1\n  port: 8080", with: "  host: &h 127.0.0.1\n  port: *h"),
            location: "config.yaml:2:9: ", message: "not allowed"),
        Case(
            name: "a token lifetime over an hour", edit: replacing("tokenLifetime: 1h", with: "tokenLifetime: 2h"),
            location: "config.yaml:8:22: providers.acme-rides.backend.tokenLifetime: ", message: "1h"),
        Case(
            name: "a digest that is not hex", edit: replacing("keySha256: ", with: "keySha256: zz"),
            location: "config.yaml:16:20: providers.acme-rides.clients[0].keySha256: ", message: "SHA-256"),
        Case(
            name: "an unknown backend type", edit: replacing("type: static-key", with: "type: carrier-pigeon"),
            location: "config.yaml:7:13: providers.acme-rides.backend.type: ", message: "carrier-pigeon"),
    ]

    @Test(arguments: cases)
    func aBrokenConfigurationExits2NamingFileLineColumnAndKey(_ testCase: Case) async throws {
        try await withCLI { cli in
            let broken = testCase.edit(try CLIFixtures.staticKeyConfig(apiKey: MintAndVerifyCLITests.apiKey))
            try cli.write("config.yaml", broken)
            let commands = [
                ["check-config", "config.yaml"],
                ["mint", "--config", "config.yaml", "--provider", CLIFixtures.providerID, "--trip-id", "t-1"],
                ["verify-token", "a.b.c", "--config", "config.yaml", "--provider", CLIFixtures.providerID],
            ]
            for command in commands {
                let result = try await cli.run(command)
                #expect(result.status == 2, "\(command[0]): \(result)")
                #expect(result.stdout.isEmpty, "\(command[0]): \(result)")
                #expect(result.stderr.hasPrefix("tokengate: \(testCase.location)"), "\(command[0]): \(result)")
                #expect(result.stderr.contains(testCase.message), "\(command[0]): \(result)")
            }
        }
    }

    @Test(.bug(id: "cli-provider-id-mark", "ConfigurationParser.parse throws a bad provider ID at the provider's value (6:5), not at its key (5:3)"))
    func aBadProviderIDExits2NamingTheKeysLineAndColumn() async throws {
        try await withCLI { cli in
            let broken = Self.replacing("  acme-rides:", with: "  Acme_Rides:")(
                try CLIFixtures.staticKeyConfig(apiKey: MintAndVerifyCLITests.apiKey))
            try cli.write("config.yaml", broken)
            let result = try await cli.run(["check-config", "config.yaml"])
            #expect(result.status == 2, "\(result)")
            #expect(result.stderr.contains("providers.Acme_Rides: 'Acme_Rides' is not a Google Cloud project ID"), "\(result)")
            // Every other key error (unknown key, duplicate key) points at the key itself; this one at `backend:`.
            withKnownIssue("the mark is the value's, line 6 column 5") {
                #expect(result.stderr.hasPrefix("tokengate: config.yaml:5:3: providers.Acme_Rides: "), "\(result)")
            }
        }
    }

    @Test func aMissingConfigurationFileExits2NamingIt() async throws {
        try await withCLI { cli in
            for command in [["check-config", "nowhere.yaml"], ["mint", "--config", "nowhere.yaml", "--provider", "acme-rides", "--trip-id", "t-1"]] {
                let result = try await cli.run(command)
                #expect(result.status == 2, "\(result)")
                #expect(result.stderr.contains("nowhere.yaml"), "\(result)")
            }
        }
    }

    @Test func anEmptyConfigurationFileExits2() async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", "")
            let result = try await cli.run(["check-config", "config.yaml"])
            #expect(result.status == 2, "\(result)")
            #expect(result.stderr.contains("config.yaml: the file is empty"), "\(result)")
        }
    }

    struct Misuse: Sendable, CustomTestStringConvertible {
        let arguments: [String]
        /// A phrase of the message on standard error.
        let message: String
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let provider = ["--config", "config.yaml", "--provider", CLIFixtures.providerID]

    static let misuses: [Misuse] = [
        Misuse(arguments: ["check-config", "--bogus"], message: "--bogus"),
        Misuse(arguments: ["verify-token", "a.b.c", "--bogus"], message: "--bogus"),
        Misuse(arguments: ["frobnicate"], message: "frobnicate"),
        Misuse(arguments: ["verify-token", "a.b.c", "--leeway", "soon"], message: "soon"),
        Misuse(arguments: ["mint"] + provider + ["--type", "driver", "--trip-id", "t-1"], message: "--vehicle-id"),
        Misuse(arguments: ["verify-token", "a.b.c"] + provider + ["--type", "driver", "--trip-id", "t-1"], message: "--vehicle-id"),
        Misuse(arguments: ["mint"] + provider + ["--type", "taxi", "--trip-id", "t-1"], message: "unknown --type 'taxi'"),
        Misuse(arguments: ["mint"] + provider, message: "give --type, or exactly one of"),
        Misuse(arguments: ["mint"] + provider + ["--trip-id", "t-1", "--vehicle-id", "v-1"], message: "give --type, or exactly one of"),
        Misuse(arguments: ["mint", "--config", "config.yaml", "--provider", "other-fleet", "--trip-id", "t-1"], message: "no provider 'other-fleet'"),
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
}
