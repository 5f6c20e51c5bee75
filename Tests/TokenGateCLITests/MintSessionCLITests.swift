import Foundation
import JOSE
import Testing

/// `mint-session`: a test session token for a jwt client, accepted by that client's keys, issuer and audience.
@Suite struct MintSessionCLITests {
    static let issuer = "https://login.acme.example/"
    static let audience = "tokengate"
    static let session = ["--issuer", issuer, "--audience", audience]

    /// `keygen --alg algorithm --kid s1` into `keys/`.
    static func keygen(_ cli: CLIRunner, _ algorithm: JWSAlgorithm) async throws {
        let result = try await cli.run(["keygen", "--alg", algorithm.rawValue, "--out", "keys", "--kid", "s1"])
        try #require(result.status == 0, "\(result)")
    }

    /// The token `mint-session` printed, or a failed requirement.
    static func mint(_ cli: CLIRunner, _ arguments: [String]) async throws -> String {
        let result = try await cli.run(["mint-session"] + arguments)
        try #require(result.status == 0, "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
        let token = result.stdout.trimmingCharacters(in: .newlines)
        #expect(!token.contains("\n") && token.split(separator: ".").count == 3, "only the token on stdout:\n\(result)")
        return token
    }

    @Test(arguments: [JWSAlgorithm.rs256, .es256, .edDSA])
    func aSessionTokenPassesTheJWTClientsChecks(_ algorithm: JWSAlgorithm) async throws {
        try await withCLI { cli in
            try await Self.keygen(cli, algorithm)
            let token = try await Self.mint(
                cli,
                ["--key", "keys/s1.pem", "--kid", "s1"] + Self.session + [
                    "--subject", "rider-7", "--claim", "tenant=acme", "--claim-json", #"trip_ids=["trip-42","trip-43"]"#,
                    "--lifetime", "30m",
                ])
            let checks = ["--key", "keys/s1.jwks.json", "--require-kid", "--max-lifetime", "1800", "--json"] + Self.session
            let accepted = try await cli.run(["verify-token", token] + checks)
            #expect(accepted.status == 0, "\(accepted)")
            let verdict = try CLIFixtures.verdict(accepted)
            let header = try #require(verdict["header"]?.objectValue)
            #expect(header["alg"] == .string(algorithm.rawValue))
            #expect(header["kid"] == "s1")
            let claims = try #require(verdict["claims"]?.objectValue)
            #expect(claims["sub"] == "rider-7")
            #expect(claims["aud"] == .string(Self.audience))
            #expect(claims["tenant"] == "acme")
            #expect(claims["trip_ids"] == ["trip-42", "trip-43"])
            let lifetime = try #require(claims["exp"]?.integerValue) - (try #require(claims["iat"]?.integerValue))
            #expect(lifetime == 1800)

            let otherIssuer = ["--issuer", "https://evil.example/", "--audience", Self.audience]
            let refused = try await cli.run(["verify-token", token, "--key", "keys/s1.jwks.json", "--json"] + otherIssuer)
            #expect(refused.status == 1, "\(refused)")
            #expect(try CLIFixtures.verdict(refused)["reason"] == "wrong_issuer")
            let otherAudience = try await cli.run(
                ["verify-token", token, "--key", "keys/s1.jwks.json", "--json", "--issuer", Self.issuer, "--audience", "other"])
            #expect(otherAudience.status == 1, "\(otherAudience)")
            #expect(try CLIFixtures.verdict(otherAudience)["reason"] == "wrong_audience")
        }
    }

    @Test func aTokenWithoutKidIsMadeWithANoteThatKeygensJWKSWillNotTakeIt() async throws {
        try await withCLI { cli in
            try await Self.keygen(cli, .es256)
            let result = try await cli.run(["mint-session", "--key", "keys/s1.pem"] + Self.session)
            #expect(result.status == 0, "\(result)")
            #expect(result.stderr.contains("the token has no kid"), "\(result)")
            let token = result.stdout.trimmingCharacters(in: .newlines)
            #expect(JWTVerifier.decodeUnverified(token).header?["kid"] == nil)
            let refused = try await cli.run(["verify-token", token, "--key", "keys/s1.jwks.json", "--json"] + Self.session)
            #expect(refused.status == 1, "\(refused)")
            #expect(try CLIFixtures.verdict(refused)["reason"] == "missing_kid")
        }
    }

    @Test func algBindsAJWKWithoutAlgAndKidNamesTheKey() async throws {
        try await withCLI { cli in
            // An RSA private key in PEM names neither an algorithm nor a kid: --alg and --kid supply them.
            let key = try JWSKey.generate(.ps256)
            let pem = try key.privateKeyPEM()
            try cli.write("idp.pem", pem)
            let token = try await Self.mint(cli, ["--key", "idp.pem", "--alg", "PS256", "--kid", "idp-2024"] + Self.session)
            let header = try #require(JWTVerifier.decodeUnverified(token).header)
            #expect(header["alg"] == "PS256")
            #expect(header["kid"] == "idp-2024")
            let published = try JWSKey.pem(pem, algorithm: .ps256, keyID: "idp-2024").publicKey()
            try cli.write("idp.jwks.json", Data(try JWKSet(keys: [published]).publicJSON()))
            let accepted = try await cli.run(["verify-token", token, "--key", "idp.jwks.json", "--require-kid"] + Self.session)
            #expect(accepted.status == 0, "\(accepted)")
        }
    }

    @Test(arguments: [
        (["--key", "keys/s1.pem", "--audience", "tokengate"], "--issuer"),
        (["--key", "keys/s1.pem", "--issuer", "https://i/"], "give --audience"),
        (["--key", "keys/s1.jwks.json"] + session, "a public key; mint-session signs"),
        (["--key", "missing.pem"] + session, "missing.pem: "),
        (["--key", "keys/s1.pem", "--lifetime", "25h"] + session, "--lifetime must be from 1s to 24h"),
        (["--key", "keys/s1.pem", "--lifetime", "soon"] + session, "--lifetime 'soon' is not a duration"),
        (["--key", "keys/s1.pem", "--claim", "iss=https://evil/"] + session, "cannot set 'iss': it comes from --issuer"),
        (["--key", "keys/s1.pem", "--claim-json", "exp=1"] + session, "cannot set 'exp'"),
        (["--key", "keys/s1.pem", "--claim", "novalue"] + session, "--claim 'novalue' is not NAME=VALUE"),
        (["--key", "keys/s1.pem", "--claim-json", "trips=[trip-1]"] + session, "--claim-json trips: not JSON"),
        (["--key", "keys/s1.pem", "--claim", "a=1", "--claim-json", "a=2"] + session, "claim 'a' is given twice"),
        (["--key", "keys/s1.pem", "--alg", "HS256"] + session, "HMAC is refused"),
        (["--key", "keys/s1.pem", "--alg", "ES256"] + session, "keys/s1.pem: key_algorithm_mismatch"),
        (["--key", "keys/s1.pem", "--kid", ""] + session, "--kid must not be empty"),
    ])
    func misuseExits2WithAMessageAndNoToken(_ arguments: [String], _ message: String) async throws {
        try await withCLI { cli in
            try await Self.keygen(cli, .rs256)
            let result = try await cli.run(["mint-session"] + arguments)
            #expect(result.status == 2, "\(result)")
            #expect(result.stdout.isEmpty, "\(result)")
            #expect(result.stderr.contains(message), "\(result)")
        }
    }

    @Test func anHMACKeyIsRefused() async throws {
        try await withCLI { cli in
            let jwk = #"{"kty":"oct","alg":"HS256","kid":"h","k":"\#(Base64URL.encode([UInt8](repeating: 7, count: 32)))"}"#
            try cli.write("secret.jwk.json", jwk)
            let result = try await cli.run(["mint-session", "--key", "secret.jwk.json"] + Self.session)
            #expect(result.status == 2, "\(result)")
            #expect(result.stdout.isEmpty, "\(result)")
            #expect(result.stderr.contains("secret.jwk.json: an HMAC key"), "\(result)")
        }
    }
}
