import Foundation
import JOSE
import Testing

/// Keys generated and tokens signed by the `openssl` command, loaded and verified by TokenGate.
@Suite(.timeLimit(.minutes(5)))
struct InteropOpenSSLKeysTests {
    /// One way of making a key with the openssl command line, and what TokenGate should make of it.
    struct KeyRecipe: Sendable, CustomTestStringConvertible {
        let name: String
        let commands: [[String]]  // each writes or transforms key.pem
        let pemHeader: String
        let algorithm: JWSAlgorithm  // the default TokenGate must pick
        let summary: String
        var testDescription: String { name }
    }

    static let recipes: [KeyRecipe] = [
        KeyRecipe(
            name: "RSA PKCS#8 (genpkey)",
            commands: [["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem"]],
            pemHeader: PEMLabel.begin("PRIVATE KEY"), algorithm: .rs256, summary: "RSA 2048"),
        KeyRecipe(
            name: "RSA PKCS#1 (genrsa -traditional)",
            commands: [["genrsa", "-traditional", "-out", "key.pem", "2048"]],
            pemHeader: PEMLabel.begin("RSA PRIVATE KEY"), algorithm: .rs256, summary: "RSA 2048"),
        KeyRecipe(
            name: "RSA 3072 PKCS#8",
            commands: [["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:3072", "-out", "key.pem"]],
            pemHeader: PEMLabel.begin("PRIVATE KEY"), algorithm: .rs256, summary: "RSA 3072"),
        KeyRecipe(
            name: "EC P-256 SEC1 (ecparam -noout)",
            commands: [["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "key.pem"]],
            pemHeader: PEMLabel.begin("EC PRIVATE KEY"), algorithm: .es256, summary: "EC P-256"),
        KeyRecipe(
            name: "EC P-256 PKCS#8 (genpkey)",
            commands: [["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "key.pem"]],
            pemHeader: PEMLabel.begin("PRIVATE KEY"), algorithm: .es256, summary: "EC P-256"),
        KeyRecipe(
            name: "EC P-384 SEC1",
            commands: [["ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out", "key.pem"]],
            pemHeader: PEMLabel.begin("EC PRIVATE KEY"), algorithm: .es384, summary: "EC P-384"),
        KeyRecipe(
            name: "EC P-521 SEC1",
            commands: [["ecparam", "-name", "secp521r1", "-genkey", "-noout", "-out", "key.pem"]],
            pemHeader: PEMLabel.begin("EC PRIVATE KEY"), algorithm: .es512, summary: "EC P-521"),
        KeyRecipe(
            name: "Ed25519 PKCS#8 (genpkey)",
            commands: [["genpkey", "-algorithm", "ed25519", "-out", "key.pem"]],
            pemHeader: PEMLabel.begin("PRIVATE KEY"), algorithm: .edDSA, summary: "Ed25519"),
    ]

    @Test(arguments: recipes)
    func tokenGateVerifiesAnOpenSSLSignedJWT(recipe: KeyRecipe) async throws {
        try await withTemporaryDirectory { directory in
            for command in recipe.commands { try await Interop.runChecked("openssl", command, in: directory) }
            let pem = try directory.readText("key.pem")
            #expect(pem.hasPrefix(recipe.pemHeader), "openssl wrote \(pem.prefix(40))")
            let key = try JWSKey.pem(pem, keyID: "k1")
            #expect(key.algorithm == recipe.algorithm)
            #expect(key.isPrivate)
            #expect(key.summary == recipe.summary)
            #expect(key.keyID == "k1")

            let token = try await Self.opensslSignedToken(recipe.algorithm, keyID: "k1", in: directory)
            try Self.expectVerifies(token, with: key.publicKey(), algorithm: recipe.algorithm)
            try Self.expectVerifies(token, with: key, algorithm: recipe.algorithm)
            try Self.expectBadSignature(Self.flippingSignatureBit(token), with: key.publicKey())

            // The public half as openssl writes it (SPKI) must load as the same key.
            try await Interop.runChecked(
                "openssl", ["pkey", "-in", "key.pem", "-pubout", "-out", "pub.pem"], in: directory)
            let publicKey = try JWSKey.pem(try directory.readText("pub.pem"), keyID: "k1")
            #expect(!publicKey.isPrivate)
            #expect(publicKey.algorithm == recipe.algorithm)
            try Self.expectVerifies(token, with: publicKey, algorithm: recipe.algorithm)

            // And a TokenGate signature with the openssl-made private key verifies with openssl's public key.
            let tokenGateToken = try JWSSigner(key: key).sign(claims: JSONObject(["sub": .string("x")]))
            let (signingInput, signature) = try InteropJWT.split(tokenGateToken)
            #expect(publicKey.isValidSignature(signature, for: Array(signingInput.utf8)))
        }
    }

    @Test func psAlgorithmsWithAnOpenSSLRSAKey() async throws {
        try await withTemporaryDirectory { directory in
            try await Interop.runChecked(
                "openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem"],
                in: directory)
            for algorithm in [JWSAlgorithm.ps256, .ps384, .ps512, .rs384, .rs512] {
                let key = try JWSKey.pem(try directory.readText("key.pem"), algorithm: algorithm)
                #expect(key.algorithm == algorithm)
                let token = try await Self.opensslSignedToken(algorithm, keyID: nil, in: directory)
                try Self.expectVerifies(token, with: key.publicKey(), algorithm: algorithm)
            }
        }
    }

    @Test func rsaPublicKeyInPKCS1FormLoads() async throws {
        try await withTemporaryDirectory { directory in
            try await Interop.runChecked(
                "openssl", ["genrsa", "-traditional", "-out", "key.pem", "2048"], in: directory)
            try await Interop.runChecked(
                "openssl", ["rsa", "-in", "key.pem", "-RSAPublicKey_out", "-out", "pub.pem"], in: directory)
            let pem = try directory.readText("pub.pem")
            #expect(pem.hasPrefix("-----BEGIN RSA PUBLIC KEY-----"))
            let key = try JWSKey.pem(pem)
            #expect(key.algorithm == .rs256 && !key.isPrivate)
            let token = try await Self.opensslSignedToken(.rs256, keyID: nil, in: directory)
            try Self.expectVerifies(token, with: key, algorithm: .rs256)
        }
    }

    @Test func ecPrivateKeyPrecededByECParametersLoads() async throws {
        // `openssl ecparam -genkey` without -noout writes an "EC PARAMETERS" block before the key.
        try await withTemporaryDirectory { directory in
            try await Interop.runChecked(
                "openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-out", "key.pem"], in: directory)
            let pem = try directory.readText("key.pem")
            #expect(pem.hasPrefix("-----BEGIN EC PARAMETERS-----"))
            let key = try JWSKey.pem(pem)
            #expect(key.algorithm == .es256 && key.isPrivate)
            let token = try await Self.opensslSignedToken(.es256, keyID: nil, in: directory)
            try Self.expectVerifies(token, with: key, algorithm: .es256)
        }
    }

    @Test(arguments: [
        (
            "RSA", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=test", "-days", "1"],
            JWSAlgorithm.rs256
        ),
        (
            "EC",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=test",
                "-days", "1",
            ], .es256
        ),
        ("Ed25519", ["req", "-x509", "-newkey", "ed25519", "-nodes", "-subj", "/CN=test", "-days", "1"], .edDSA),
    ])
    func tokenGateVerifiesWithTheKeyOfAnX509Certificate(
        name: String, command: [String], algorithm: JWSAlgorithm
    )
        async throws
    {
        try await withTemporaryDirectory { directory in
            try await Interop.runChecked(
                "openssl", command + ["-keyout", "key.pem", "-out", "cert.pem"], in: directory)
            let certificate = try directory.readText("cert.pem")
            #expect(certificate.hasPrefix("-----BEGIN CERTIFICATE-----"))
            let key = try JWSKey.pem(certificate, keyID: "cert")
            #expect(key.algorithm == algorithm, "\(name)")
            #expect(!key.isPrivate, "a certificate holds only a public key")
            let token = try await Self.opensslSignedToken(algorithm, keyID: "cert", in: directory)
            try Self.expectVerifies(token, with: key, algorithm: algorithm)
            try Self.expectBadSignature(Self.flippingSignatureBit(token), with: key)
            #expect(throws: (any Error).self, "a certificate cannot sign") { try JWSSigner(key: key) }
        }
    }

    @Test func pemShapesOpenSSLWritesAroundAKeyLoad() async throws {
        try await withTemporaryDirectory { directory in
            try await Interop.runChecked(
                "openssl",
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=t",
                    "-days", "1", "-keyout", "key.pem", "-out", "cert.pem",
                ], in: directory)
            let token = try await Self.opensslSignedToken(.es256, keyID: nil, in: directory)
            // `openssl x509 -text` puts a human-readable dump before the PEM block.
            try await Interop.runChecked(
                "openssl", ["x509", "-in", "cert.pem", "-text", "-out", "text.pem"], in: directory)
            // `openssl pkcs12 -nodes` writes "Bag Attributes" headers, the certificate first and then the key.
            try await Interop.runChecked(
                "openssl",
                [
                    "pkcs12", "-export", "-inkey", "key.pem", "-in", "cert.pem", "-out", "bundle.p12", "-passout",
                    "pass:",
                ],
                in: directory)
            try await Interop.runChecked(
                "openssl", ["pkcs12", "-in", "bundle.p12", "-nodes", "-passin", "pass:", "-out", "bag.pem"],
                in: directory)
            let shapes: [(name: String, text: String, isPrivate: Bool)] = [
                ("x509 -text", try directory.readText("text.pem"), false),
                ("pkcs12 bag", try directory.readText("bag.pem"), false),
                ("CRLF key", try directory.readText("key.pem").replacingOccurrences(of: "\n", with: "\r\n"), true),
                ("comment before key", "# staging signer\n" + (try directory.readText("key.pem")), true),
            ]
            for shape in shapes {
                let key = try #require(try? JWSKey.pem(shape.text), "\(shape.name) did not load")
                #expect(key.algorithm == .es256 && key.isPrivate == shape.isPrivate, "\(shape.name)")
                try Self.expectVerifies(token, with: key, algorithm: .es256)
            }
        }
    }

    // MARK: - Helpers

    /// A JWT signed by `openssl` with key.pem in `directory`.
    static func opensslSignedToken(
        _ algorithm: JWSAlgorithm, keyID: String?, in directory: TemporaryDirectory
    )
        async throws -> String
    {
        let signingInput = InteropJWT.signingInput(algorithm: algorithm.rawValue, keyID: keyID)
        let inputFile = "input-\(UUID().uuidString).txt"
        try directory.write(signingInput, to: inputFile)
        let signature = try await OpenSSLSigner.sign(algorithm, key: "key.pem", input: inputFile, in: directory)
        return signingInput + "." + Base64URL.encode(signature)
    }

    static func expectVerifies(
        _ token: String, with key: JWSKey, algorithm: JWSAlgorithm, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let verifier = JWTVerifier(keys: try JWKSet(keys: [key]))
        do {
            let verified = try verifier.verify(token, policy: ValidationPolicy(), now: InteropJWT.now)
            #expect(verified.algorithm == algorithm, sourceLocation: sourceLocation)
            #expect(verified.claims["sub"] == .string("interop"), sourceLocation: sourceLocation)
            #expect(verified.expiresAt == InteropJWT.now + 3600, sourceLocation: sourceLocation)
        } catch {
            Issue.record(
                "TokenGate rejected an openssl-signed \(algorithm) token: \(error)", sourceLocation: sourceLocation)
        }
    }

    static func expectBadSignature(
        _ token: String, with key: JWSKey, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let verifier = JWTVerifier(keys: try JWKSet(keys: [key]))
        do {
            _ = try verifier.verify(token, policy: ValidationPolicy(), now: InteropJWT.now)
            Issue.record("a token with a flipped signature bit verified", sourceLocation: sourceLocation)
        } catch {
            #expect(error.reason == .badSignature, "\(error)", sourceLocation: sourceLocation)
        }
    }

    /// The token with the first signature byte's low bit flipped (re-encoded, so still canonical base64url).
    static func flippingSignatureBit(_ token: String) throws -> String {
        var (signingInput, signature) = try InteropJWT.split(token)
        signature[0] ^= 0x01
        return signingInput + "." + Base64URL.encode(signature)
    }
}
