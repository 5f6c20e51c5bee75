import Foundation
import NIOSSL
import OpenSSLPrimitives

/// `credential_source.certificate`: the workload proves itself with an X.509 certificate over mutual TLS. Its
/// certificate configuration file (gcloud's `certificate_config.json`: `{"cert_configs": {"workload": {"cert_path",
/// "key_path"}}}`) is `certificate_config_location`, or with `use_default_certificate_config: true` the file
/// `GOOGLE_API_CERTIFICATE_CONFIG` names, else gcloud's (`$CLOUDSDK_CONFIG/`, else `~/.config/gcloud/`).
///
/// The subject token is google-auth's: a JSON array of the base64 DER of the leaf (the first certificate of
/// `cert_path`), then of each certificate of `trust_chain_path` (a first one equal to the leaf is skipped; the leaf
/// further down is an error). The certificate and key are presented to STS, and to IAM when impersonating; their
/// servers are checked against the system's roots, or the PEM file `SSL_CERT_FILE` names. Every file is read at
/// load (a broken one is a configuration error then) and again at every fetch, so a rotated certificate is used.
struct CertificateSubjectSource: SubjectTokenSource {
    static let subjectTokenType = "urn:ietf:params:oauth:token-type:mtls"
    static let defaultFileName = "certificate_config.json"

    let configurationFile: String
    /// Where `configurationFile` was found: the field, the variable, or gcloud's directory.
    let configurationOrigin: String
    let trustChainPath: String?
    /// `nil`: the system's trust roots.
    let trustRoots: [NIOSSLCertificate]?

    var summary: String { "the X.509 certificate of \(configurationFile) (\(configurationOrigin))" }

    var fetchAllowance: Duration { .zero }

    /// `fields` is the `credential_source.certificate` object.
    init(_ fields: CredentialFields, environment: [String: String]) throws(GoogleAuthError) {
        let location = try fields.optionalString("certificate_config_location")
        let useDefault = try fields.optionalBool("use_default_certificate_config") ?? false
        switch (location, useDefault) {
        case (.some, true):
            throw fields.error(
                "certificate_config_location", "is set and \"\(fields.prefix)use_default_certificate_config\" is true; set one only")
        case (let location?, false):
            (configurationFile, configurationOrigin) = (location, "certificate_config_location")
        case (nil, true):
            (configurationFile, configurationOrigin) = try Self.defaultConfiguration(environment, fields: fields)
        case (nil, false):
            throw fields.error("certificate_config_location", "is missing and \"\(fields.prefix)use_default_certificate_config\" is not true")
        }
        trustChainPath = try fields.optionalString("trust_chain_path")
        if let rootsFile = environment["SSL_CERT_FILE"], !rootsFile.isEmpty {
            trustRoots = try Self.certificates(rootsFile, what: "trust roots file (SSL_CERT_FILE)")
        } else {
            trustRoots = nil
        }
        _ = try load()
    }

    func subjectToken(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> SubjectToken {
        let certificate = try load()
        return SubjectToken(value: certificate.subjectToken, provenance: certificate.provenance, clientTLS: certificate.tlsConfiguration)
    }

    /// The files as they are now, read and checked: the subject token and the TLS configuration presenting them.
    func load() throws(GoogleAuthError) -> ClientCertificate {
        let configuration = try CredentialsFile(path: configurationFile, what: "certificate configuration file").fields
        let workload = try configuration.object("cert_configs").object("workload")
        let certificatePath = try workload.string("cert_path")
        let chain = try Self.certificates(certificatePath, what: "certificate file (cert_path)")
        let keyPath = try workload.string("key_path")
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: try CredentialsFile.read(keyPath, what: "private key file (key_path)"), format: .pem)
        } catch let error as GoogleAuthError {
            throw error
        } catch {
            throw GoogleAuthError(.configuration, "private key file (key_path) \(keyPath) holds no unencrypted PEM private key")
        }
        let leaf = try Self.der(chain[0], certificatePath)
        var encoded = [Data(leaf).base64EncodedString()]
        if let trustChainPath {
            for (index, certificate) in try Self.certificates(trustChainPath, what: "trust chain file").enumerated() {
                let der = try Self.der(certificate, trustChainPath)
                guard der == leaf else {
                    encoded.append(Data(der).base64EncodedString())
                    continue
                }
                guard index == 0 else {
                    throw GoogleAuthError(.configuration, "trust chain file \(trustChainPath) holds the leaf certificate below the top")
                }
            }
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateChain = chain.map { .certificate($0) }
        tls.privateKey = .privateKey(key)
        if let trustRoots { tls.trustRoots = .certificates(trustRoots) }
        do {
            // The context is what checks that the key belongs to the leaf; better now than at the handshake.
            _ = try NIOSSLContext(configuration: tls)
        } catch {
            throw GoogleAuthError(.configuration, "certificate file \(certificatePath) and private key file \(keyPath) are not a pair (\(error))")
        }
        let fingerprint = (try? Digest.sha256(leaf)).map(HexBytes.encode) ?? "?"
        let provenance =
            "client certificate SHA-256 \(fingerprint) from \(certificatePath), valid until \(chain[0].notValidAfter)"
            + (encoded.count > 1 ? ", with \(encoded.count - 1) trust chain certificate\(encoded.count == 2 ? "" : "s")" : "")
        // json.dumps(list): ", " between the items, as google-auth writes it.
        let subjectToken = "[" + encoded.map(LibraryEncoding.jsonString).joined(separator: ", ") + "]"
        return ClientCertificate(subjectToken: subjectToken, tlsConfiguration: tls, provenance: provenance)
    }

    /// `GOOGLE_API_CERTIFICATE_CONFIG`, else gcloud's configuration directory.
    private static func defaultConfiguration(
        _ environment: [String: String], fields: CredentialFields
    ) throws(GoogleAuthError) -> (String, String) {
        if let path = environment["GOOGLE_API_CERTIFICATE_CONFIG"], !path.isEmpty { return (path, "GOOGLE_API_CERTIFICATE_CONFIG") }
        if let config = environment["CLOUDSDK_CONFIG"], !config.isEmpty { return ("\(config)/\(defaultFileName)", "gcloud's configuration") }
        if let home = environment["HOME"], !home.isEmpty { return ("\(home)/.config/gcloud/\(defaultFileName)", "gcloud's configuration") }
        throw fields.error("use_default_certificate_config", "is true but neither GOOGLE_API_CERTIFICATE_CONFIG nor HOME is set")
    }

    /// Every PEM certificate of `path`, at least one.
    private static func certificates(_ path: String, what: String) throws(GoogleAuthError) -> [NIOSSLCertificate] {
        let bytes = try CredentialsFile.read(path, what: what)
        guard let certificates = try? NIOSSLCertificate.fromPEMBytes(bytes), !certificates.isEmpty else {
            throw GoogleAuthError(.configuration, "\(what) \(path) holds no readable PEM certificate")
        }
        return certificates
    }

    private static func der(_ certificate: NIOSSLCertificate, _ path: String) throws(GoogleAuthError) -> [UInt8] {
        do { return try certificate.toDERBytes() } catch {
            throw GoogleAuthError(.configuration, "a certificate of \(path) cannot be encoded as DER (\(error))")
        }
    }
}

/// A workload certificate read from its files: what STS and IAM are shown.
struct ClientCertificate: Sendable {
    /// The subject token (certificates only: public, but handled as every subject token is).
    let subjectToken: String
    /// The certificate chain of `cert_path` and its key, for the handshake.
    let tlsConfiguration: TLSConfiguration
    let provenance: String
}
