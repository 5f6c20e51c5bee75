import JOSE
import OpenSSLPrimitives

/// `server.tls`: the public listener speaks HTTPS with this certificate chain and key.
///
/// ```yaml
/// tls:
///   certificateFile: tls/server.pem     # PEM chain, the server's certificate first
///   privateKeyFile: tls/server.key      # PEM private key, mode 0600
///   minimumVersion: "1.2"               # "1.2" (default) or "1.3"
/// ```
///
/// The files are read and checked when the configuration is (a certificate that is not for the key is a located
/// error), so a reload with a renewed certificate either takes whole or not at all.
package struct TLSSettings: Sendable, Equatable {
    /// The lowest protocol version accepted.
    package enum Version: String, Sendable, Equatable {
        case v1_2 = "1.2"
        case v1_3 = "1.3"
    }

    /// The certificate chain, PEM.
    package var certificateChainPEM: String
    /// The private key, PEM.
    package var privateKeyPEM: String
    /// The lowest protocol version accepted.
    package var minimumVersion: Version
    /// When the server's certificate stops being valid, epoch seconds.
    package var notAfter: Int64

    /// Settings from PEM text (tests; the configuration reads files).
    package init(certificateChainPEM: String, privateKeyPEM: String, minimumVersion: Version = .v1_2, notAfter: Int64) {
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
        self.minimumVersion = minimumVersion
        self.notAfter = notAfter
    }

    static func parse(_ node: ConfigNode) throws -> TLSSettings {
        let mapping = try node.mapping(allowedKeys: ["certificateFile", "privateKeyFile", "minimumVersion"])
        let certificateNode = try mapping.required("certificateFile")
        let keyNode = try mapping.required("privateKeyFile")
        var version = Version.v1_2
        if let versionNode = mapping.optional("minimumVersion") {
            let text = try versionNode.string()
            guard let parsed = Version(rawValue: text) else { throw versionNode.error("must be \"1.2\" or \"1.3\", got '\(text)'") }
            version = parsed
        }
        let certificate = String(decoding: try certificateNode.fileContents(), as: UTF8.self)
        if let problem = try keyNode.privateKeyFilePermissionProblem() { throw keyNode.error(problem) }
        let key = String(decoding: try keyNode.fileContents(), as: UTF8.self)
        let validity: CertificateValidity
        do {
            validity = try TLSKeyPair.check(certificatePEM: certificate, privateKeyPEM: key)
        } catch  where error.reason == .keyMismatch {
            throw certificateNode.error("the certificate is not for the key in privateKeyFile")
        } catch  where error.reason == .notPrivate || error.reason == .unsupportedKey {
            throw keyNode.error("not a usable private key: \(error.message)")
        } catch {
            throw certificateNode.error("not a usable certificate and key: \(error.message)")
        }
        return TLSSettings(certificateChainPEM: certificate, privateKeyPEM: key, minimumVersion: version, notAfter: validity.notAfter)
    }
}
