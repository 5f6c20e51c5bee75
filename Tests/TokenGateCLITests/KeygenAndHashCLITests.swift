import Foundation
import JOSE
import OpenSSLPrimitives
import Testing

/// `keygen` and `hash-api-key`: the files and digests an operator puts in `config.yaml`.
@Suite struct KeygenAndHashCLITests {
    /// The value on the output line that starts with `label` (`kid:         3f…` → `3f…`).
    static func value(of label: String, in output: String) -> String? {
        output.split(separator: "\n").first { $0.hasPrefix(label) }?.dropFirst(label.count)
            .trimmingCharacters(in: .whitespaces)
    }

    @Test(arguments: [JWSAlgorithm.rs256, .es256, .edDSA])
    func keygenWritesAnOwnerOnlyKeyWhosePublicJWKSVerifiesItsTokens(_ algorithm: JWSAlgorithm) async throws {
        try await withCLI { cli in
            let result = try await cli.run(["keygen", "--alg", algorithm.rawValue, "--out", "keys", "--kid", "test-key"])
            try #require(result.status == 0, "\(result)")
            #expect(result.stdout.contains("kid:         test-key"))
            #expect(result.stdout.contains("jwksFile: keys/test-key.jwks.json"), "the config snippet that uses it:\n\(result)")
            #expect(result.stdout.contains("- jwksFile: keys/test-key.jwks.json") == (algorithm == .rs256), "verify: is RS256 only")

            let privateAttributes = try FileManager.default.attributesOfItem(atPath: cli.path("keys/test-key.pem"))
            #expect((privateAttributes[.posixPermissions] as? Int) == 0o600)
            let publicAttributes = try FileManager.default.attributesOfItem(atPath: cli.path("keys/test-key.jwks.json"))
            #expect((publicAttributes[.posixPermissions] as? Int) == 0o644)
            #expect(!FileManager.default.fileExists(atPath: cli.path("keys/test-key.json")), "no service account asked for")

            // What a `jwksFile:` entry reads: a JWKS document with the public key only.
            let jwks = try #require(try JSON.parse(Array(cli.read("keys/test-key.jwks.json"))).objectValue)
            let members = try #require(jwks["keys"]?.arrayValue)
            #expect(members.count == 1)
            #expect(members.first?.objectValue?["d"] == nil, "the public JWKS must hold no private member")
            let set = try JWKSet(json: Array(cli.read("keys/test-key.jwks.json")))
            let published = try #require(set.key(withID: "test-key"))
            #expect(published.algorithm == algorithm)
            #expect(!published.isPrivate)

            let pem = String(decoding: try cli.read("keys/test-key.pem"), as: UTF8.self)
            let key = try JWSKey.pem(pem, keyID: "test-key")
            #expect(key.isPrivate)
            #expect(key.algorithm == algorithm)
            #expect(try key.publicJWK() == published.publicJWK(), "the JWKS holds the PEM's public half")
            let token = try JWSSigner(key: key).sign(claims: TokenKit.claims())
            let verified = try await cli.run(
                ["verify-token", token, "--key", "keys/test-key.jwks.json", "--now", "\(TokenKit.now)", "--require-kid", "--json"])
            #expect(verified.status == 0, "\(verified)")
            #expect(try CLIFixtures.verdict(verified)["valid"] == true)

            // A token signed by another key with the same kid is not accepted.
            let impostor = try JWSKey.generate(algorithm, keyID: "test-key")
            let forged = try JWSSigner(key: impostor).sign(claims: TokenKit.claims())
            let rejected = try await cli.run(["verify-token", forged, "--key", "keys/test-key.jwks.json", "--now", "\(TokenKit.now)", "--json"])
            #expect(rejected.status == 1, "\(rejected)")
            #expect(try CLIFixtures.verdict(rejected)["reason"] == "bad_signature")
        }
    }

    @Test func keygenNamesAKeyLikeAServiceAccountKeyByDefault() async throws {
        try await withCLI { cli in
            let result = try await cli.run(["keygen", "--out", "keys"])
            try #require(result.status == 0, "\(result)")
            let kid = try #require(Self.value(of: "kid:", in: result.stdout), "\(result)")
            #expect(kid.count == 40 && kid.allSatisfy(\.isHexDigit), "kid \(kid)")
            let set = try JWKSet(json: Array(cli.read("keys/\(kid).jwks.json")))
            #expect(set.keys.map(\.keyID) == [kid])
            #expect(set.keys.first?.summary == "RSA 2048")
        }
    }

    @Test(arguments: [
        (["keygen", "--out", "keys", "--alg", "HS256"], "--alg must be RS256, ES256 or EdDSA"),
        (["keygen", "--out", "keys", "--kid", "../escape"], "--kid may hold only"),
        (["keygen", "--kid", "k"], "--out"),
    ])
    func keygenRefusesBadArguments(_ arguments: [String], _ message: String) async throws {
        try await withCLI { cli in
            let result = try await cli.run(arguments)
            #expect(result.status == 2, "\(result)")
            #expect(result.stderr.contains(message), "\(result)")
            #expect(!FileManager.default.fileExists(atPath: cli.path("escape.pem")))
        }
    }

    @Test func keygenNeverOverwritesAKey() async throws {
        try await withCLI { cli in
            let first = try await cli.run(["keygen", "--out", "keys", "--kid", "k1"])
            try #require(first.status == 0, "\(first)")
            let original = try cli.read("keys/k1.pem")
            let second = try await cli.run(["keygen", "--out", "keys", "--kid", "k1"])
            #expect(second.status == 2, "\(second)")
            #expect(second.stderr.contains("already exist"), "\(second)")
            #expect(try cli.read("keys/k1.pem") == original)
        }
    }

    @Test func keygenWritesNothingWhenAnyOfItsFilesExists() async throws {
        try await withCLI { cli in
            try cli.write("keys/k2.jwks.json", "{}")
            let result = try await cli.run(["keygen", "--out", "keys", "--kid", "k2"])
            #expect(result.status == 2, "\(result)")
            #expect(result.stderr.contains("keys/k2.jwks.json already exists"), "\(result)")
            #expect(!FileManager.default.fileExists(atPath: cli.path("keys/k2.pem")), "no private key without its JWKS")
            #expect(try cli.read("keys/k2.jwks.json") == Data("{}".utf8))
        }
    }

    @Test(arguments: ["tg_demo_not_a_secret", "a key with spaces inside", "ключ"])
    func hashAPIKeyPrintsTheSHA256HexOfTheKey(_ key: String) async throws {
        try await withCLI { cli in
            let expected = CLIFixtures.hex(try Digest.sha256(Array(key.utf8)))
            let fromArgument = try await cli.run(["hash-api-key", key])
            #expect(fromArgument.status == 0, "\(fromArgument)")
            #expect(fromArgument.stdout == expected + "\n")
            for command in [["hash-api-key", "-"], ["hash-api-key"]] {
                let fromStandardInput = try await cli.run(command, stdin: key + "\n")
                #expect(fromStandardInput.status == 0, "\(fromStandardInput)")
                #expect(fromStandardInput.stdout == expected + "\n", "a trailing newline is not part of the key")
            }
        }
    }

    @Test func hashAPIKeyMatchesTheDigestInTheDemoConfiguration() async throws {
        try await withCLI { cli in
            let result = try await cli.run(["hash-api-key", "tg_demo_not_a_secret"])
            #expect(result.stdout == "9ae4a3e2a48a06ab46007841990560acb1408babd4b1965ebe237cfec90382b6\n")
        }
    }

    @Test func hashAPIKeyGeneratesAKeyAndItsMatchingDigest() async throws {
        try await withCLI { cli in
            var keys: Set<String> = []
            for _ in 0..<2 {
                let result = try await cli.run(["hash-api-key", "--generate"])
                try #require(result.status == 0, "\(result)")
                let key = try #require(Self.value(of: "apiKey:", in: result.stdout), "\(result)")
                let digest = try #require(Self.value(of: "keySha256:", in: result.stdout), "\(result)")
                #expect(key.hasPrefix("tg_") && key.count >= 40, "key \(key)")
                #expect(digest == CLIFixtures.hex(try Digest.sha256(Array(key.utf8))))
                keys.insert(key)
            }
            #expect(keys.count == 2, "two generated keys must differ")
        }
    }

    @Test func hashAPIKeyRefusesAnEmptyKey() async throws {
        try await withCLI { cli in
            let result = try await cli.run(["hash-api-key"], stdin: "\n")
            #expect(result.status == 2, "\(result)")
            #expect(result.stderr.contains("no key given"), "\(result)")
        }
    }
}
