import Foundation
import JOSE
import OpenSSLPrimitives
import Testing

/// `verify-token`: `--alg` binds keys that name no algorithm, an empty token is invalid, and every verdict carries
/// the token's fingerprint.
@Suite(.bug(id: 8, "findings from a trial run: --alg binding, empty token, fingerprint"))
struct VerifyTokenOptionsCLITests {
    static let now = ["--now", "\(TokenKit.now)"]

    /// `key`'s public JWK (an HMAC key's secret JWK) with `alg` removed, written to `name`.
    static func writeJWKWithoutAlg(_ key: JWSKey, to name: String, in cli: CLIRunner) throws {
        var jwk: JSONObject
        if key.isSymmetric {
            jwk = ["kty": "oct", "kid": .string(key.keyID ?? ""), "k": .string(Base64URL.encode(Self.secret))]
        } else {
            jwk = try #require(try JSON.parse(try key.publicJWK()).objectValue)
            jwk["alg"] = nil
        }
        try cli.write(name, Data(JSON.serialize(.object(jwk))))
    }

    static let secret = [UInt8](repeating: 0x5C, count: 32)

    @Test func oneAlgBindsAnHMACJWKWithoutAlg() async throws {
        try await withCLI { cli in
            let key = try JWSKey.hmac(secret: Self.secret, algorithm: .hs256, keyID: "h1")
            try Self.writeJWKWithoutAlg(key, to: "oct.jwk.json", in: cli)
            let token = try JWSSigner(key: key).sign(claims: TokenKit.claims())
            let bound = try await cli.run(["verify-token", token, "--key", "oct.jwk.json", "--alg", "HS256", "--json"] + Self.now)
            #expect(bound.status == 0, "\(bound)")
            #expect(try CLIFixtures.verdict(bound)["valid"] == true)
            // Without --alg nothing says what the secret is for: a key error, named with its file.
            let unbound = try await cli.run(["verify-token", token, "--key", "oct.jwk.json"] + Self.now)
            #expect(unbound.status == 2, "\(unbound)")
            #expect(unbound.stderr.contains("oct.jwk.json: "), "\(unbound)")
        }
    }

    @Test(arguments: [JWSAlgorithm.ps384, .rs512])
    func oneAlgBindsAnRSAJWKWithoutAlg(_ algorithm: JWSAlgorithm) async throws {
        try await withCLI { cli in
            let key = try JWSKey.pem(try TokenKit.shared.key.privateKeyPEM(), algorithm: algorithm, keyID: "k1")
            try Self.writeJWKWithoutAlg(key, to: "rsa.jwk.json", in: cli)
            let token = try JWSSigner(key: key).sign(claims: TokenKit.claims())
            let bound = try await cli.run(["verify-token", token, "--key", "rsa.jwk.json", "--alg", algorithm.rawValue, "--json"] + Self.now)
            #expect(bound.status == 0, "\(bound)")
            // Unbound, the RSA key defaults to RS256 and the token's alg does not match it.
            let unbound = try await cli.run(["verify-token", token, "--key", "rsa.jwk.json", "--json"] + Self.now)
            #expect(unbound.status == 1, "\(unbound)")
            #expect(try CLIFixtures.verdict(unbound)["reason"] == "key_alg_mismatch")
        }
    }

    @Test func aKeyWithItsOwnAlgIsNotRebound() async throws {
        try await withCLI { cli in
            let kit = TokenKit.shared
            try kit.writePublicKeys(into: cli)  // key.jwk.json says "alg": "RS256"
            let ps384 = try JWSKey.pem(try kit.key.privateKeyPEM(), algorithm: .ps384, keyID: TokenKit.keyID)
            let token = try JWSSigner(key: ps384).sign(claims: TokenKit.claims())
            let result = try await cli.run(["verify-token", token, "--key", "key.jwk.json", "--alg", "PS384", "--json"] + Self.now)
            #expect(result.status == 1, "\(result)")
            #expect(try CLIFixtures.verdict(result)["reason"] == "key_alg_mismatch")
        }
    }

    @Test func oneAlgBindsAPEMKeyAndAMisfitIsAKeyError() async throws {
        try await withCLI { cli in
            let kit = TokenKit.shared
            try kit.writePublicKeys(into: cli)
            let ps256 = try JWSKey.pem(try kit.key.privateKeyPEM(), algorithm: .ps256)
            let token = try JWSSigner(key: ps256).sign(claims: TokenKit.claims())
            let bound = try await cli.run(["verify-token", token, "--key", "key.pem", "--alg", "PS256"] + Self.now)
            #expect(bound.status == 0, "\(bound)")
            let misfit = try await cli.run(["verify-token", token, "--key", "key.pem", "--alg", "ES256"] + Self.now)
            #expect(misfit.status == 2, "\(misfit)")
            #expect(misfit.stderr.contains("key.pem: key_algorithm_mismatch"), "\(misfit)")
        }
    }

    @Test func anEmptyTokenArgumentIsMalformed() async throws {
        try await withCLI { cli in
            try TokenKit.shared.writePublicKeys(into: cli)
            let text = try await cli.run(["verify-token", "", "--key", "key.jwk.json"])
            #expect(text.status == 1, "\(text)")
            #expect(text.stdout.contains("verdict: invalid (malformed)"), "\(text)")
            #expect(text.stderr.contains("token rejected: malformed"), "\(text)")
            let json = try await cli.run(["verify-token", "", "--key", "key.jwk.json", "--json"])
            #expect(json.status == 1, "\(json)")
            #expect(try CLIFixtures.verdict(json)["reason"] == "malformed")

            try cli.write("config.yaml", try CLIFixtures.staticKeyConfig(apiKey: MintAndVerifyCLITests.apiKey))
            let gateway = try await cli.run(["verify-token", "", "--json"] + MintAndVerifyCLITests.provider)
            #expect(gateway.status == 1, "\(gateway)")
            #expect(try CLIFixtures.verdict(gateway)["reason"] == "malformed")
        }
    }

    /// Known answers from an independent SHA-256 (Python's hashlib), not from JOSE's own digest.
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("a.b.c", "845e30448809e2bc8958eb025bfc795235d13b077a53d0c3abbd2385170dc9b8"),
    ])
    func theFingerprintIsTheSHA256OfTheCompactToken(_ token: String, _ hex: String) async throws {
        try await withCLI { cli in
            try TokenKit.shared.writePublicKeys(into: cli)
            let text = try await cli.run(["verify-token", token, "--key", "key.jwk.json"])
            #expect(text.stdout.contains("\nfingerprint: sha256:\(hex)\n"), "\(text)")
            let json = try await cli.run(["verify-token", token, "--key", "key.jwk.json", "--json"])
            #expect(try CLIFixtures.verdict(json)["fingerprint"] == .string("sha256:\(hex)"), "\(json)")
        }
    }

    @Test func theFingerprintOfAValidTokenIgnoresTheNewlineAroundIt() async throws {
        try await withCLI { cli in
            let kit = TokenKit.shared
            try kit.writePublicKeys(into: cli)
            let token = try kit.sign()
            let expected = "sha256:" + CLIFixtures.hex(try Digest.sha256(Array(token.utf8)))
            let result = try await cli.run(["verify-token", "--key", "key.jwk.json", "--json"] + Self.now, stdin: "\n\(token)\n")
            #expect(result.status == 0, "\(result)")
            #expect(try CLIFixtures.verdict(result)["fingerprint"] == .string(expected))
        }
    }
}
