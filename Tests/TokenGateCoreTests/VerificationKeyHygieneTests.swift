import Foundation
import JOSE
import OpenSSLPrimitives
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

/// What a `verify:` list refuses or warns about: certificates outside their validity, private keys where public
/// ones suffice, entries without the service account they sign for.
@Suite(.timeLimit(.minutes(5))) struct VerificationKeyHygieneTests {
    let directory: URL

    init() throws {
        directory = URL(fileURLWithPath: try TemporaryDirectory(prefix: "hygiene").path)
    }

    /// A self-signed RSA certificate valid from `notBefore` to `notAfter` (epoch seconds), made by Python's
    /// `cryptography`, an implementation independent of ours.
    func certificate(notBefore: Int64, notAfter: Int64) async throws -> String {
        let program = """
            import datetime, sys
            from cryptography import x509
            from cryptography.x509.oid import NameOID
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import rsa
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "signer")])
            when = lambda s: datetime.datetime.fromtimestamp(int(s), datetime.timezone.utc)
            cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(1).not_valid_before(when(sys.argv[1])).not_valid_after(when(sys.argv[2]))
                .sign(key, hashes.SHA256()))
            sys.stdout.write(cert.public_bytes(serialization.Encoding.PEM).decode())
            """
        let (status, output) = try await ChildProcess.run(
            "python3", ["-c", program, "\(notBefore)", "\(notAfter)"], mergingErrors: false)
        try #require(status == 0, "python3 with cryptography is needed to make a certificate")
        return output
    }

    func parse(_ entries: String, files: [String: String]) throws -> ([BoundKeySource], [ConfigError]) {
        for (name, text) in files {
            try Data(text.utf8).write(to: directory.appendingPathComponent(name))
        }
        let file = ConfigFile(path: directory.appendingPathComponent("config.yaml").path, environment: [:])
        let root = try ConfigNode.parse(Array("verify:\n\(entries)".utf8), file: file)
        let sources = try BoundKeySource.parseList(try root.mapping(allowedKeys: ["verify"]).required("verify"), allowsURLs: true)
        return (sources, file.diagnostics.all)
    }

    static let now = Int64(Date().timeIntervalSince1970)
    static let entry = "  - keyFile: cert.pem\n    keyId: k1\n    serviceAccount: signer@acme.iam.gserviceaccount.com\n"

    @Test func aValidCertificateLoadsAndItsExpiryIsKept() async throws {
        let pem = try await certificate(notBefore: Self.now - 3600, notAfter: Self.now + 86400)
        #expect(try CertificateValidity.of(pem: pem) == CertificateValidity(notBefore: Self.now - 3600, notAfter: Self.now + 86400))
        let (sources, warnings) = try parse(Self.entry, files: ["cert.pem": pem])
        #expect(sources.first?.certificateExpiresAt == Self.now + 86400)
        #expect(warnings.isEmpty)
    }

    @Test(
        arguments: [
            (-7200, -3600, "the certificate expired at"),
            (3600, 7200, "the certificate is not valid before"),
        ] as [(Int64, Int64, String)])
    func aCertificateOutsideItsValidityIsRefused(_ from: Int64, _ until: Int64, _ message: String) async throws {
        let pem = try await certificate(notBefore: Self.now + from, notAfter: Self.now + until)
        let error = #expect(throws: ConfigError.self) { _ = try parse(Self.entry, files: ["cert.pem": pem]) }
        #expect(error?.description.contains("config.yaml:2:14: verify[0].keyFile: \(message)") == true, "\(String(describing: error))")
    }

    @Test func aPrivateKeyWhereAPublicOneSufficesIsUsedAsPublicAndWarned() throws {
        let key = try JWSKey.generate(.rs256, keyID: "k1")
        let (sources, warnings) = try parse(
            Self.entry.replacingOccurrences(of: "cert.pem", with: "key.pem"), files: ["key.pem": try key.privateKeyPEM()])
        guard case .fixed(let set)? = sources.first?.source else { throw ConditionNeverHeld() }
        #expect(set.keys.allSatisfy { !$0.isPrivate })
        #expect(warnings.contains { $0.message.hasPrefix("holds a private key; only its public part is used") })
        // Written with the default umask (0644 here): the warning says that too.
        #expect(warnings.contains { $0.message.contains("is accessible to others") })
    }

    @Test func aJWKSURLEntryMustNameItsServiceAccount() throws {
        let error = #expect(throws: ConfigError.self) { _ = try parse("  - jwksUrl: https://keys.acme.test/jwks.json\n", files: [:]) }
        #expect(error?.message.hasPrefix("missing required key 'serviceAccount'") == true)
    }
}
