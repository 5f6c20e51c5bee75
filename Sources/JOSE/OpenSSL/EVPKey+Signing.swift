internal import COpenSSL
import OpenSSLPrimitives

// Cost against `openssl speed`: speed signs and verifies a precomputed digest with a context made once, while a
// JWS operation must hash the signing input (~450 bytes for a Fleet Engine token, about a microsecond of SHA-256)
// and, since contexts are not thread-safe, work on a context of its own. That context is a duplicate of a
// per-key, per-algorithm template (`SignatureTemplate`), not a fresh EVP_DigestSignInit, which in OpenSSL 3.0
// re-fetches the digest and signature method on every call; also avoided: digest lookup by name, size-query
// calls, copies of the signing input.
extension EVPKey {
    /// Signs `message` for `algorithm` (which the caller has checked with `validate(for:)`); ECDSA comes back as R‖S.
    func sign(_ message: UnsafeRawBufferPointer, algorithm: JWSAlgorithm) throws(OpenSSLError) -> [UInt8] {
        // EVP_PKEY_get_size is the largest signature the key makes (DER ECDSA may come out shorter): one call
        // instead of asking EVP_DigestSign for the size first.
        let capacity = Int(EVP_PKEY_get_size(pointer))
        guard capacity > 0 else { throw OpenSSLError.drain("EVP_PKEY_get_size") }
        var signature = [UInt8](repeating: 0, count: capacity)
        let template = try template(for: algorithm, signing: true)
        let length = try signature.withUnsafeMutableBufferPointer { output throws(OpenSSLError) in
            try template.sign(message, into: output)
        }
        guard length <= capacity else { throw OpenSSLError(operation: "EVP_DigestSign", details: ["overlong"]) }
        signature.removeLast(capacity - length)
        guard case .ec(let curve) = kind else { return signature }
        return try ECDSASignature.raw(fromDER: signature, curve: curve)
    }

    /// True only for a valid signature; never throws, and leaves the error queue empty.
    func isValidSignature(_ signature: [UInt8], for message: UnsafeRawBufferPointer, algorithm: JWSAlgorithm) -> Bool {
        // A verify failure is an answer, not an error: whatever OpenSSL queued is dropped.
        defer { OpenSSLError.clearQueue() }
        var wire = signature
        switch kind {
        case .rsa:
            // RFC 8017 sections 8.1.2 and 8.2.2, step 1: a signature is exactly k (modulus) octets. OpenSSL
            // enforces this for PKCS#1 v1.5 but its PSS path accepts a shorter one (a dropped leading zero).
            guard signature.count == Int(EVP_PKEY_get_size(pointer)) else { return false }
        case .ec(let curve):
            guard let der = ECDSASignature.der(fromRaw: signature, curve: curve) else { return false }
            wire = der
        case .ed25519:
            break
        }
        guard let template = try? template(for: algorithm, signing: false) else { return false }
        let result = wire.withUnsafeBufferPointer { template.verify($0, for: message) }
        return result == 1
    }

}
