internal import COpenSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// When an X.509 certificate is valid: `notBefore` to `notAfter`, epoch seconds. A certificate used only as a
/// carrier for a verification key still says how long its key may be trusted, so a verifier refuses one outside it.
public struct CertificateValidity: Sendable, Equatable {
    /// The first second it is valid.
    public let notBefore: Int64
    /// The last second it is valid.
    public let notAfter: Int64

    /// A validity from `notBefore` to `notAfter`, epoch seconds.
    public init(notBefore: Int64, notAfter: Int64) {
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// Whether `time` (epoch seconds) lies within the validity.
    public func contains(_ time: Int64) -> Bool { notBefore <= time && time <= notAfter }

    /// The validity of the certificate in `pem` (its first block), or nil when that block is not a certificate.
    public static func of(pem text: String) throws(CertificateError) -> CertificateValidity? {
        guard let block = PEMBlock.first(in: text), block.label == "CERTIFICATE" else { return nil }
        let bio: MemoryBIO
        do { bio = try MemoryBIO(copying: Array(block.text.utf8)) } catch {
            throw CertificateError("OpenSSL failed in \(error.operation).", openSSLError: error)
        }
        return try withExtendedLifetime(bio) { () throws(CertificateError) -> CertificateValidity in
            guard let certificate = PEM_read_bio_X509(bio.pointer, nil, nil, nil) else {
                throw CertificateError("OpenSSL could not read the CERTIFICATE PEM block.", openSSLError: .drain("PEM read CERTIFICATE"))
            }
            defer { X509_free(certificate) }
            guard let notBefore = epochSeconds(X509_get0_notBefore(certificate)),
                let notAfter = epochSeconds(X509_get0_notAfter(certificate))
            else {
                throw CertificateError("The certificate's validity times cannot be read.")
            }
            return CertificateValidity(notBefore: notBefore, notAfter: notAfter)
        }
    }

    private static func epochSeconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }
}

/// A certificate OpenSSL could not read.
public struct CertificateError: Error, Sendable, CustomStringConvertible {
    /// A human sentence; never key material.
    public let message: String
    /// The drained OpenSSL error queue when OpenSSL took part in the failure.
    public let openSSLError: OpenSSLError?

    /// Creates an error.
    public init(_ message: String, openSSLError: OpenSSLError? = nil) {
        self.message = message
        self.openSSLError = openSSLError
    }

    /// `malformed_key: message`, as a key that cannot be read is described.
    public var description: String { "malformed_key: \(message)" }
}
