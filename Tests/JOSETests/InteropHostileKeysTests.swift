import Foundation
import JOSE
import Testing

/// Keys that `openssl` makes without complaint but TokenGate must refuse, each with its stable reason.
@Suite(.timeLimit(.minutes(5)))
struct InteropHostileKeysTests {
    struct HostileKey: Sendable, CustomTestStringConvertible {
        let name: String
        let commands: [[String]]
        let file: String
        let algorithm: JWSAlgorithm?
        let reasons: Set<JWSKeyError.Reason>
        var testDescription: String { name }
    }

    static let cases: [HostileKey] = [
        HostileKey(
            name: "RSA 1024 private (genrsa)", commands: [["genrsa", "-out", "key.pem", "1024"]], file: "key.pem",
            algorithm: nil, reasons: [.weakKey]),
        HostileKey(
            name: "RSA 1024 private, PKCS#1", commands: [["genrsa", "-traditional", "-out", "key.pem", "1024"]],
            file: "key.pem", algorithm: nil, reasons: [.weakKey]),
        HostileKey(
            name: "RSA 1024 public (SPKI)",
            commands: [
                ["genrsa", "-out", "key.pem", "1024"], ["pkey", "-in", "key.pem", "-pubout", "-out", "pub.pem"],
            ],
            file: "pub.pem", algorithm: nil, reasons: [.weakKey]),
        HostileKey(
            name: "RSA 1024 for PS256", commands: [["genrsa", "-out", "key.pem", "1024"]], file: "key.pem",
            algorithm: .ps256, reasons: [.weakKey]),
        HostileKey(
            name: "RSA 2047 bits", commands: [["genrsa", "-out", "key.pem", "2047"]], file: "key.pem",
            algorithm: nil, reasons: [.weakKey]),
        HostileKey(
            name: "RSA 1024 certificate",
            commands: [
                [
                    "req", "-x509", "-newkey", "rsa:1024", "-nodes", "-subj", "/CN=weak", "-days", "1",
                    "-keyout", "key.pem", "-out", "cert.pem",
                ]
            ],
            file: "cert.pem", algorithm: nil, reasons: [.weakKey]),
        HostileKey(
            name: "secp256k1 private (SEC1)",
            commands: [["ecparam", "-name", "secp256k1", "-genkey", "-noout", "-out", "key.pem"]], file: "key.pem",
            algorithm: nil, reasons: [.unsupportedKey]),
        HostileKey(
            name: "secp256k1 private for ES256",
            commands: [["ecparam", "-name", "secp256k1", "-genkey", "-noout", "-out", "key.pem"]], file: "key.pem",
            algorithm: .es256, reasons: [.unsupportedKey, .algorithmMismatch]),
        HostileKey(
            name: "secp256k1 public",
            commands: [
                ["ecparam", "-name", "secp256k1", "-genkey", "-noout", "-out", "key.pem"],
                ["pkey", "-in", "key.pem", "-pubout", "-out", "pub.pem"],
            ],
            file: "pub.pem", algorithm: nil, reasons: [.unsupportedKey]),
        HostileKey(
            name: "brainpoolP256r1",
            commands: [["ecparam", "-name", "brainpoolP256r1", "-genkey", "-noout", "-out", "key.pem"]],
            file: "key.pem", algorithm: nil, reasons: [.unsupportedKey]),
        HostileKey(
            name: "Ed448", commands: [["genpkey", "-algorithm", "ed448", "-out", "key.pem"]], file: "key.pem",
            algorithm: nil, reasons: [.unsupportedKey]),
        HostileKey(
            name: "X25519 (a key-agreement key)", commands: [["genpkey", "-algorithm", "x25519", "-out", "key.pem"]],
            file: "key.pem", algorithm: nil, reasons: [.unsupportedKey]),
        HostileKey(
            name: "P-256 key for ES384",
            commands: [["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "key.pem"]], file: "key.pem",
            algorithm: .es384, reasons: [.algorithmMismatch]),
        HostileKey(
            name: "P-384 key for ES256",
            commands: [["ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out", "key.pem"]], file: "key.pem",
            algorithm: .es256, reasons: [.algorithmMismatch]),
        HostileKey(
            name: "RSA key for ES256",
            commands: [["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem"]],
            file: "key.pem", algorithm: .es256, reasons: [.algorithmMismatch]),
        HostileKey(
            name: "RSA key for HS256",
            commands: [["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem"]],
            file: "key.pem", algorithm: .hs256, reasons: [.algorithmMismatch]),
        HostileKey(
            name: "Ed25519 key for ES256", commands: [["genpkey", "-algorithm", "ed25519", "-out", "key.pem"]],
            file: "key.pem", algorithm: .es256, reasons: [.algorithmMismatch]),
        HostileKey(
            name: "RSA-PSS-restricted private key",
            commands: [["genpkey", "-algorithm", "RSA-PSS", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem"]],
            file: "key.pem", algorithm: nil, reasons: [.unsupportedKey]),
        HostileKey(
            name: "RSA-PSS-restricted key for PS256",
            commands: [["genpkey", "-algorithm", "RSA-PSS", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem"]],
            file: "key.pem", algorithm: .ps256, reasons: [.unsupportedKey]),
        HostileKey(
            name: "DSA 2048",
            commands: [
                ["genpkey", "-genparam", "-algorithm", "DSA", "-pkeyopt", "dsa_paramgen_bits:2048", "-out", "dsa.pem"],
                ["genpkey", "-paramfile", "dsa.pem", "-out", "key.pem"],
            ],
            file: "key.pem", algorithm: nil, reasons: [.unsupportedKey]),
        HostileKey(
            name: "EC parameters only", commands: [["ecparam", "-name", "prime256v1", "-out", "key.pem"]],
            file: "key.pem", algorithm: nil, reasons: [.malformedKey, .unsupportedKey]),
    ]

    @Test(arguments: cases)
    func refusesWithAStableReason(hostile: HostileKey) async throws {
        try await withTemporaryDirectory { directory in
            for command in hostile.commands { try await Interop.runChecked("openssl", command, in: directory) }
            let pem = try directory.readText(hostile.file)
            let error = #expect(throws: JWSKeyError.self) {
                try JWSKey.pem(pem, algorithm: hostile.algorithm)
            }
            #expect(
                error.map { hostile.reasons.contains($0.reason) } == true,
                "\(hostile.name): \(String(describing: error))")
            #expect(error.map { !$0.message.contains("PRIVATE") && !$0.message.contains("MII") } ?? true)
        }
    }

    @Test func anEncryptedPrivateKeyIsRefusedWithoutPromptingForAPassphrase() async throws {
        // OpenSSL's default PEM password callback reads the terminal: loading must fail, never block.
        try await withTemporaryDirectory { directory in
            try await Interop.runChecked(
                "openssl",
                ["genpkey", "-algorithm", "ed25519", "-aes-256-cbc", "-pass", "pass:interop", "-out", "key.pem"],
                in: directory)
            let pem = try directory.readText("key.pem")
            #expect(pem.hasPrefix(PEMLabel.begin("ENCRYPTED PRIVATE KEY")))
            let error = #expect(throws: JWSKeyError.self) { try JWSKey.pem(pem) }
            #expect(error?.reason == .malformedKey || error?.reason == .unsupportedKey, "\(String(describing: error))")
        }
    }

    @Test func aTruncatedOpenSSLKeyIsMalformed() async throws {
        try await withTemporaryDirectory { directory in
            try await Interop.runChecked(
                "openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem"],
                in: directory)
            let lines = try directory.readText("key.pem").split(separator: "\n")
            let truncated = (lines.prefix(10) + [lines.last!]).joined(separator: "\n") + "\n"
            let error = #expect(throws: JWSKeyError.self) { try JWSKey.pem(truncated) }
            #expect(error?.reason == .malformedKey, "\(String(describing: error))")
        }
    }
}
