import Foundation
import JOSE
import OpenSSLPrimitives
import Testing

/// `check-config` reports every mistake at once, warns about what works but is probably wrong, and summarises; the
/// commands about one provider read only that provider.
@Suite struct CheckConfigCLITests {
    static let apiKey = "tg_check_config_key_0123456789"

    @Test func everyErrorIsReportedInOneRun() async throws {
        try await withCLI { cli in
            let broken =
                try CLIFixtures.staticKeyConfig(apiKey: Self.apiKey)
                .replacingOccurrences(of: "port: 8080", with: #"port: "8080""#)
                .replacingOccurrences(of: "            generateIfMissing: true\n", with: "")
                    + """

                      second-fleet:
                        backend: { type: carrier-pigeon }
                        clients:
                          - { name: x, type: api-key, keySha256: nothex, allow: { consumer: any } }
                    """
            try cli.write("config.yaml", broken)
            let result = try await cli.run(["check-config", "config.yaml"])
            #expect(result.status == 2, "\(result)")
            #expect(result.stdout.isEmpty)
            let lines = result.stderr.split(separator: "\n").map(String.init)
            #expect(lines.contains { $0.hasPrefix("tokengate: config.yaml:3:9: server.port: expected an integer") }, "\(result)")
            #expect(lines.contains { $0.contains("providers.second-fleet.clients[0].keySha256: expected the 64 hex characters") }, "\(result)")
            #expect(lines.contains { $0.contains("providers.acme-rides.backend.keys.consumer[0].serviceAccountFile: no such file") }, "\(result)")
            #expect(lines.last == "config.yaml: 3 errors", "\(result)")
        }
    }

    @Test func warningsAreLocatedAndTheSummaryShowsEachProvider() async throws {
        try await withCLI { cli in
            let signer = try JWSKey.generate(.rs256, keyID: "signer-1")
            try cli.write("signer.pem", try signer.privateKeyPEM())
            let digest = CLIFixtures.hex(try Digest.sha256(Array(Self.apiKey.utf8)))
            let config =
                try CLIFixtures.staticKeyConfig(apiKey: Self.apiKey) + """

                      upstream-fleet:
                        backend:
                          type: upstream-http
                          url: http://tokens.acme.example/{tripId}
                          tokenTypes: [consumer]
                          verify:
                            - keyFile: signer.pem
                              keyId: signer-1
                              serviceAccount: signer@upstream-fleet.iam.gserviceaccount.com
                        rateLimits: { caller: { rate: 10/s, burst: 5 } }
                        clients:
                          - { name: shared, type: api-key, keySha256: \(digest), allow: { consumer: any } }
                    """
            try cli.write("config.yaml", config)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: cli.directory.appendingPathComponent("signer.pem").path)
            let result = try await cli.run(["check-config", "config.yaml"])
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.hasPrefix("config.yaml: OK (3 warnings)"), "\(result)")
            let warnings = result.stderr.split(separator: "\n").map(String.init)
            #expect(warnings.count == 3, "\(result)")
            #expect(warnings.contains { $0.hasPrefix("tokengate: warning: config.yaml:") && $0.contains("backend.url: plain http to another host") })
            #expect(warnings.contains { $0.contains("verify[0].keyFile: holds a private key; only its public part is used") })
            #expect(warnings.contains { $0.contains("providers.upstream-fleet.clients[0]: the same API key is accepted by provider acme-rides too") })
            #expect(result.stdout.contains("GET http://tokens.acme.example/{tripId}"), "\(result)")
            #expect(result.stdout.contains("kid signer-1 for signer@upstream-fleet.iam.gserviceaccount.com"), "\(result)")
            #expect(result.stdout.contains("caller=10/s burst 5") || result.stdout.contains("caller="), "\(result)")
            #expect(result.stdout.contains("client:   shared (api-key: consumer)"), "\(result)")
            #expect(!result.stdout.contains(Self.apiKey) && !result.stderr.contains(Self.apiKey))
        }
    }

    /// Another tenant's unset secret must not stop a command about this tenant.
    @Test func mintAndVerifyReadOnlyTheNamedProvider() async throws {
        try await withCLI { cli in
            let config =
                try CLIFixtures.staticKeyConfig(apiKey: Self.apiKey) + """

                      other-fleet:
                        backend: { type: static-key, keys: { consumer: [{ serviceAccountFile: other.json }] } }
                        clients:
                          - { name: x, type: api-key, keySha256: "${OTHER_FLEET_KEY_SHA256}", allow: { consumer: any } }
                    """
            try cli.write("config.yaml", config)
            let minted = try await cli.run(["mint", "--config", "config.yaml", "--provider", CLIFixtures.providerID, "--trip-id", "t-1"])
            #expect(minted.status == 0, "\(minted)")
            let token = minted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let verified = try await cli.run([
                "verify-token", token, "--config", "config.yaml", "--provider", CLIFixtures.providerID, "--trip-id", "t-1",
            ])
            #expect(verified.status == 0, "\(verified)")
            // The whole file still fails where every provider is needed, naming the variable.
            let check = try await cli.run(["check-config", "config.yaml"])
            #expect(check.status == 2)
            #expect(check.stderr.contains("environment variable OTHER_FLEET_KEY_SHA256 is not set"), "\(check)")
        }
    }
}
