internal import COpenSSL
import OpenSSLPrimitives
import Synchronization

extension EVPKey {
    /// The first key or certificate in PEM text. Encrypted keys are refused rather than prompting for a password.
    static func load(pem text: String) throws(JWSKeyError) -> EVPKey {
        guard let block = PEMBlock.first(in: text) else {
            throw JWSKeyError(.malformedKey, "No PEM block (-----BEGIN …-----) found.")
        }
        if block.label == "ENCRYPTED PRIVATE KEY" || block.text.contains("Proc-Type:") {
            throw JWSKeyError(.unsupportedKey, "Encrypted PEM keys are not supported; decrypt the key file first.")
        }
        let bio: MemoryBIO
        do {
            bio = try MemoryBIO(copying: Array(block.text.utf8))
        } catch {
            throw .openSSL(error)
        }
        // The BIO must outlive every C call that uses its pointer: Swift may release an object after its last
        // Swift-visible use, which `bio.pointer` would be.
        let (key, isPrivate): (OpaquePointer?, Bool) = try withExtendedLifetime(bio) { () throws(JWSKeyError) in
            // One decode at a time: OpenSSL 3.0 reads these blocks through its OSSL_DECODER machinery, and a CI run
            // of parallel tests once saw an RSA PUBLIC KEY that always loads fail to decode while other keys were
            // being read. Keys are read at load and reload, never per request, so the lock costs nothing that matters.
            // The key pointer is returned through a local: it is ours alone, but not a Sendable value.
            nonisolated(unsafe) var decoded: (OpaquePointer?, Bool) = (nil, false)
            try pemDecoding.withLock { _ throws(JWSKeyError) in decoded = try read(block, bio) }
            return decoded
        }
        guard let key else {
            // Only the labels matched above get here, so the label is one of ours.
            throw JWSKeyError(
                .malformedKey, "OpenSSL could not read the \(block.label) PEM block.",
                openSSLError: .drain("PEM read \(block.label)"))
        }
        let evpKey = try make(takingOwnershipOf: key, isPrivate: isPrivate)
        if case .ec = evpKey.kind { try evpKey.checkPublicKey() }
        // A private key file carries its public part too (SEC1 and PKCS#8 EC keys their point, RSA keys n and e),
        // and OpenSSL reads both without comparing them: a mismatch would sign tokens its own public half refuses.
        if isPrivate { try evpKey.checkKeyPair() }
        return evpKey
    }

    /// Serializes the OpenSSL decoders (see ``load(pem:)``).
    private static let pemDecoding = Mutex(())

    private static func read(_ block: PEMBlock, _ bio: MemoryBIO) throws(JWSKeyError) -> (OpaquePointer?, Bool) {
        switch block.label {
        case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
            // The callback refuses any password prompt (OpenSSL would otherwise read the terminal).
            return (PEM_read_bio_PrivateKey(bio.pointer, nil, { _, _, _, _ in 0 }, nil), true)
        case "PUBLIC KEY":
            return (PEM_read_bio_PUBKEY(bio.pointer, nil, { _, _, _, _ in 0 }, nil), false)
        case "RSA PUBLIC KEY":
            return (decodePKCS1PublicKey(bio.pointer), false)
        case "CERTIFICATE":
            return (publicKey(fromCertificateIn: bio.pointer), false)
        default:
            let label = Sanitized.quote(block.label)
            throw JWSKeyError(.unsupportedKey, "PEM block \(label) is not a supported key or certificate.")
        }
    }

    // "BEGIN RSA PUBLIC KEY" has no non-deprecated PEM_read_* call: the OpenSSL 3 decoder reads it.
    private static func decodePKCS1PublicKey(_ bio: OpaquePointer) -> OpaquePointer? {
        var key: OpaquePointer?
        let selection = tokengate_EVP_PKEY_PUBLIC_KEY()
        guard let decoder = OSSL_DECODER_CTX_new_for_pkey(&key, "PEM", nil, "RSA", selection, nil, nil) else {
            return nil
        }
        defer { OSSL_DECODER_CTX_free(decoder) }
        guard OSSL_DECODER_from_bio(decoder, bio) == 1 else { return nil }
        return key
    }

    private static func publicKey(fromCertificateIn bio: OpaquePointer) -> OpaquePointer? {
        guard let certificate = PEM_read_bio_X509(bio, nil, nil, nil) else { return nil }
        defer { X509_free(certificate) }
        // X509_get_pubkey returns a new reference: ours to free (X509_get0_pubkey would borrow).
        return X509_get_pubkey(certificate)
    }
}
