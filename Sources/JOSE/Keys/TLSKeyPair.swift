internal import COpenSSL
public import OpenSSLPrimitives

/// A server's TLS certificate chain and private key, checked with OpenSSL before a listener may use them: the
/// first certificate must be for this private key, or every handshake would fail at run time.
public enum TLSKeyPair {
    /// Checks that `certificatePEM`'s first certificate is for `privateKeyPEM`; returns its validity.
    public static func check(certificatePEM: String, privateKeyPEM: String) throws(JWSKeyError) -> CertificateValidity {
        guard let block = PEMBlock.first(in: certificatePEM), block.label == "CERTIFICATE" else {
            throw JWSKeyError(.malformedKey, "No CERTIFICATE PEM block found.")
        }
        let key = try EVPKey.load(pem: privateKeyPEM)
        guard key.isPrivate else { throw JWSKeyError(.notPrivate, "The key file holds no private key.") }
        let bio: MemoryBIO
        do { bio = try MemoryBIO(copying: Array(block.text.utf8)) } catch { throw .openSSL(error) }
        let matches = try withExtendedLifetime(bio) { () throws(JWSKeyError) -> Bool in
            guard let certificate = PEM_read_bio_X509(bio.pointer, nil, nil, nil) else {
                throw JWSKeyError(.malformedKey, "OpenSSL could not read the CERTIFICATE PEM block.", openSSLError: .drain("PEM read CERTIFICATE"))
            }
            defer { X509_free(certificate) }
            // Compares the certificate's public key with the private key's; clears the error queue it may fill.
            let result = X509_check_private_key(certificate, key.pointer) == 1
            ERR_clear_error()
            return result
        }
        guard matches else {
            throw JWSKeyError(.keyMismatch, "The certificate is not for this private key.")
        }
        let validity: CertificateValidity?
        do { validity = try CertificateValidity.of(pem: certificatePEM) } catch {
            throw JWSKeyError(.malformedKey, error.message, openSSLError: error.openSSLError)
        }
        guard let validity else { throw JWSKeyError(.malformedKey, "No CERTIFICATE PEM block found.") }
        return validity
    }
}
