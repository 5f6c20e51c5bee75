import Foundation
import JOSE
import Testing

/// `keygen --service-account`: files the configuration consumes as they are, proven by loading them in a config.
@Suite(.bug(id: 8, "keygen wrote files that neither jwksFile: nor keyFile: accepted"))
struct KeygenServiceAccountCLITests {
    static let email = "signer@acme-rides.iam.gserviceaccount.com"
    static let sessionIssuer = "https://login.acme.example/"

    /// A static-key provider signing with the generated service-account file and a jwt client trusting the
    /// generated JWKS; with `filesProvider`, a file-backend provider that verifies `tokens.yaml` with that same JWKS.
    static func config(kid: String, filesProvider: Bool = false) -> String {
        let signing = """
            providers:
              acme-rides:
                backend:
                  type: static-key
                  keys:
                    consumer:
                      - serviceAccountFile: keys/\(kid).json
                clients:
                  - name: rider-app
                    type: jwt
                    jwksFile: keys/\(kid).jwks.json
                    issuer: \(sessionIssuer)
                    audience: tokengate
                    allow: { consumer: { claim: trip_ids } }

            """
        let files = """
              acme-files:
                backend:
                  type: file
                  path: tokens.yaml
                  verify:
                    - jwksFile: keys/\(kid).jwks.json
                      serviceAccount: \(email)
                clients:
                  - name: backend
                    type: api-key
                    keySha256: \(String(repeating: "ab", count: 32))
                    allow: { consumer: any }

            """
        return signing + (filesProvider ? files : "")
    }

    @Test func theServiceAccountFileSignsWhatTheJWKSVerifies() async throws {
        try await withCLI { cli in
            let generated = try await cli.run(["keygen", "--out", "keys", "--kid", "sa-1", "--service-account", Self.email])
            try #require(generated.status == 0, "\(generated)")
            #expect(generated.stdout.contains("- serviceAccountFile: keys/sa-1.json"), "\(generated)")
            #expect(generated.stdout.contains("serviceAccount: \(Self.email)"), "\(generated)")
            let attributes = try FileManager.default.attributesOfItem(atPath: cli.path("keys/sa-1.json"))
            #expect((attributes[.posixPermissions] as? Int) == 0o600)

            let account = try ServiceAccountKey(json: Array(cli.read("keys/sa-1.json")))
            #expect(account.clientEmail == Self.email)
            #expect(account.privateKeyID == "sa-1")
            #expect(account.projectID == "acme-rides", "the project comes from the email's domain")
            #expect(account.key.algorithm == .rs256)
            let set = try JWKSet(json: Array(cli.read("keys/sa-1.jwks.json")))
            let published = try #require(set.key(withID: "sa-1"))
            #expect(try published.publicJWK() == account.key.publicJWK(), "one key in every file")
            let pem = try JWSKey.pem(String(decoding: try cli.read("keys/sa-1.pem"), as: UTF8.self), keyID: "sa-1")
            #expect(try pem.publicJWK() == account.key.publicJWK())

            // Mint with the static-key provider, then verify with nothing but the generated JWKS.
            try cli.write("config.yaml", Self.config(kid: "sa-1"))
            let minted = try await cli.run(["mint", "--config", "config.yaml", "--provider", "acme-rides", "--trip-id", "t-1"])
            try #require(minted.status == 0, "\(minted)")
            let token = minted.stdout.trimmingCharacters(in: .newlines)
            let strict = ["--require-kid", "--alg", "RS256", "--audience", CLIFixtures.audience, "--max-lifetime", "3600"]
            let verified = try await cli.run(["verify-token", token, "--key", "keys/sa-1.jwks.json", "--issuer", Self.email] + strict)
            #expect(verified.status == 0, "\(verified)")
            #expect(verified.stdout.contains("verdict: valid"), "\(verified)")

            // The same JWKS in a file backend's `verify: - jwksFile:` accepts the token as the gateway would.
            try cli.write("tokens.yaml", "consumer:\n  t-1: \(token)\n")
            try cli.write("config.yaml", Self.config(kid: "sa-1", filesProvider: true))
            let checked = try await cli.run(["check-config", "config.yaml"])
            #expect(checked.status == 0, "\(checked)")
            let judged = try await cli.run(["verify-token", token, "--config", "config.yaml", "--provider", "acme-files", "--trip-id", "t-1"])
            #expect(judged.status == 0, "\(judged)")

            // And a token from another key with the same kid is refused by that JWKS.
            let other = try ServiceAccountKey.generate(projectID: "acme-rides", clientEmail: Self.email, keyID: "sa-1")
            let forged = try JWSSigner(key: other.key).sign(claims: try #require(JWTVerifier.decodeUnverified(token).claims))
            let refused = try await cli.run(["verify-token", forged, "--key", "keys/sa-1.jwks.json", "--json"])
            #expect(refused.status == 1, "\(refused)")
            #expect(try CLIFixtures.verdict(refused)["reason"] == "bad_signature")
        }
    }

    @Test func aServiceAccountOutsideIAMNeedsItsProject() async throws {
        try await withCLI { cli in
            let email = "12345-compute@developer.gserviceaccount.com"
            let refused = try await cli.run(["keygen", "--out", "keys", "--kid", "c1", "--service-account", email])
            #expect(refused.status == 2, "\(refused)")
            #expect(refused.stderr.contains("give --project"), "\(refused)")
            let made = try await cli.run(["keygen", "--out", "keys", "--kid", "c1", "--service-account", email, "--project", "acme-rides"])
            try #require(made.status == 0, "\(made)")
            let account = try ServiceAccountKey(json: Array(cli.read("keys/c1.json")))
            #expect(account.projectID == "acme-rides")
            #expect(account.clientEmail == email)
        }
    }

    @Test(arguments: [
        (["--service-account", "not-an-email"], "is not an email address"),
        (["--service-account", "a@b@acme-rides.iam.gserviceaccount.com"], "is not an email address"),
        (["--service-account", "signer @acme-rides.iam.gserviceaccount.com"], "is not an email address"),
        (["--service-account", "signer@localhost"], "is not an email address"),
        (["--service-account", "signer@acme.iam.gserviceaccount.com"], "'acme' is not a Google Cloud project ID"),
        (["--service-account", email, "--project", "other-fleet"], "differs from the service account's project 'acme-rides'"),
        (["--service-account", "x@example.com", "--project", "Bad_Project"], "is not a Google Cloud project ID"),
        (["--service-account", email, "--alg", "ES256"], "--service-account needs --alg RS256"),
        (["--project", "acme-rides"], "--project needs --service-account"),
    ])
    func badServiceAccountArgumentsExit2AndWriteNothing(_ arguments: [String], _ message: String) async throws {
        try await withCLI { cli in
            let result = try await cli.run(["keygen", "--out", "keys", "--kid", "k"] + arguments)
            #expect(result.status == 2, "\(result)")
            #expect(result.stderr.contains(message), "\(result)")
            #expect(!FileManager.default.fileExists(atPath: cli.path("keys")), "\(result)")
        }
    }
}
