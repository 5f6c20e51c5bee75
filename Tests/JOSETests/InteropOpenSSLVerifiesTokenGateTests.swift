import Foundation
import JOSE
import Testing

/// Signatures made by TokenGate, checked by the `openssl` command line tool with only the public key PEM.
@Suite(.timeLimit(.minutes(5)))
struct InteropOpenSSLVerifiesTokenGateTests {
    @Test(arguments: [JWSAlgorithm.rs256, .ps256, .es256, .edDSA])
    func opensslVerifiesATokenGateSignedJWT(algorithm: JWSAlgorithm) async throws {
        try await withTemporaryDirectory { directory in
            let key = try JWSKey.generate(algorithm, keyID: "interop-1")
            try directory.write(try key.publicKeyPEM(), to: "pub.pem")
            let signer = try JWSSigner(key: key)
            let claims = JSONObject([
                "iss": .string("interop@example.iam.gserviceaccount.com"),
                "aud": .string("https://fleetengine.googleapis.com/"),
                "iat": .integer(InteropJWT.now), "exp": .integer(InteropJWT.now + 3600),
            ])
            let token = try signer.sign(claims: claims)
            let (signingInput, signature) = try InteropJWT.split(token)
            if algorithm == .es256 { #expect(signature.count == 64, "ES256 on the wire is R‖S, 64 bytes") }
            if algorithm == .edDSA { #expect(signature.count == 64) }
            if algorithm == .rs256 || algorithm == .ps256 { #expect(signature.count == 256) }
            let encoded = algorithm == .es256 ? ECDSASignatureEncoding.der(fromRaw: signature) : signature
            try directory.write(encoded, to: "sig.bin")

            try directory.write(signingInput, to: "input.txt")
            let verified = try await Self.opensslVerify(algorithm, input: "input.txt", in: directory)
            #expect(verified.succeeded, "\(verified)")
            #expect(verified.stdout.contains(Self.successText(algorithm)), "\(verified)")

            try directory.write(InteropJWT.tampered(signingInput), to: "tampered.txt")
            let rejected = try await Self.opensslVerify(algorithm, input: "tampered.txt", in: directory)
            #expect(!rejected.succeeded, "openssl accepted a tampered input: \(rejected)")
            #expect(!rejected.stdout.contains(Self.successText(algorithm)))
        }
    }

    @Test func openSSLReadsThePublicKeyPEMAsTheSameKeyType() async throws {
        try await withTemporaryDirectory { directory in
            for (algorithm, expected) in [
                (JWSAlgorithm.rs256, "Public-Key: (2048 bit)"), (.es256, "NIST CURVE: P-256"),
                (.es384, "NIST CURVE: P-384"),
                (.es512, "NIST CURVE: P-521"), (.edDSA, "ED25519 Public-Key"),
            ] {
                let key = try JWSKey.generate(algorithm)
                let pem = try key.publicKeyPEM()
                #expect(pem.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
                try directory.write(pem, to: "pub.pem")
                let text = try await Interop.runChecked(
                    "openssl", ["pkey", "-pubin", "-in", "pub.pem", "-noout", "-text"], in: directory)
                #expect(text.stdout.contains(expected), "\(algorithm): \(text.stdout)")
            }
        }
    }

    @Test(arguments: [JWSAlgorithm.rs256, .es256, .edDSA])
    func opensslReadsThePrivateKeyPEMAndSignsForTokenGate(algorithm: JWSAlgorithm) async throws {
        try await withTemporaryDirectory { directory in
            // PKCS#8 out of TokenGate, in through openssl: both sides must agree on the key.
            let key = try JWSKey.generate(algorithm)
            let pem = try key.privateKeyPEM()
            #expect(pem.hasPrefix(PEMLabel.begin("PRIVATE KEY") + "\n"))
            try directory.write(pem, to: "key.pem")
            try await Interop.runChecked("openssl", ["pkey", "-in", "key.pem", "-check", "-noout"], in: directory)
            let signingInput = InteropJWT.signingInput(algorithm: algorithm.rawValue)
            try directory.write(signingInput, to: "input.txt")
            let signature = try await OpenSSLSigner.sign(algorithm, key: "key.pem", input: "input.txt", in: directory)
            #expect(key.publicKey().isValidSignature(signature, for: Array(signingInput.utf8)))
        }
    }

    static func successText(_ algorithm: JWSAlgorithm) -> String {
        algorithm == .edDSA ? "Signature Verified Successfully" : "Verified OK"
    }

    static func opensslVerify(
        _ algorithm: JWSAlgorithm, input: String, in directory: TemporaryDirectory
    ) async throws
        -> ProcessOutput
    {
        switch algorithm {
        case .edDSA:
            return try await Interop.run(
                "openssl",
                ["pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", "pub.pem", "-sigfile", "sig.bin", "-in", input],
                in: directory)
        case .ps256:
            return try await Interop.run(
                "openssl",
                [
                    "dgst", "-sha256", "-verify", "pub.pem", "-sigopt", "rsa_padding_mode:pss", "-sigopt",
                    "rsa_pss_saltlen:digest", "-signature", "sig.bin", input,
                ], in: directory)
        default:
            return try await Interop.run(
                "openssl", ["dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.bin", input], in: directory)
        }
    }
}

/// JWS signatures made by the `openssl` command with a PEM private key, in JWS wire format.
enum OpenSSLSigner {
    static func sign(
        _ algorithm: JWSAlgorithm, key: String, input: String, in directory: TemporaryDirectory
    )
        async throws -> [UInt8]
    {
        let output = "sig-\(UUID().uuidString).bin"
        switch algorithm {
        case .edDSA:
            try await Interop.runChecked(
                "openssl", ["pkeyutl", "-sign", "-rawin", "-inkey", key, "-in", input, "-out", output], in: directory)
            return try directory.read(output)
        case .ps256, .ps384, .ps512:
            try await Interop.runChecked(
                "openssl",
                [
                    "dgst", "-\(digest(algorithm))", "-sign", key, "-sigopt", "rsa_padding_mode:pss", "-sigopt",
                    "rsa_pss_saltlen:digest", "-out", output, input,
                ], in: directory)
            return try directory.read(output)
        case .es256, .es384, .es512:
            try await Interop.runChecked(
                "openssl", ["dgst", "-\(digest(algorithm))", "-sign", key, "-out", output, input], in: directory)
            let width = ["ES256": 32, "ES384": 48, "ES512": 66][algorithm.rawValue]!
            return try ECDSASignatureEncoding.raw(fromDER: try directory.read(output), width: width)
        default:
            try await Interop.runChecked(
                "openssl", ["dgst", "-\(digest(algorithm))", "-sign", key, "-out", output, input], in: directory)
            return try directory.read(output)
        }
    }

    static func digest(_ algorithm: JWSAlgorithm) -> String {
        switch algorithm.rawValue.suffix(3) {
        case "384": "sha384"
        case "512": "sha512"
        default: "sha256"
        }
    }
}
