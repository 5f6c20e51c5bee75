import Foundation
import Testing

/// A broken `config.yaml` exits 2 with `file:line:column: key: message`.
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

    @Test(.bug(id: "cli-provider-id-mark", "ConfigurationParser locates a bad provider ID at its value, not its key"))
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
            let commands = [
                ["check-config", "nowhere.yaml"],
                ["mint", "--config", "nowhere.yaml", "--provider", "acme-rides", "--trip-id", "t-1"],
            ]
            for command in commands {
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
}
