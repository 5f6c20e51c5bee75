internal import COpenSSL

// Cost against `openssl speed`: speed signs and verifies a precomputed digest with a context made once, while a
// JWS operation must hash the signing input (~450 bytes for a Fleet Engine token, about a microsecond of SHA-256)
// and, since contexts are not thread-safe, set up a fresh EVP_MD_CTX and key context each time (OpenSSL 3 also
// re-fetches the digest inside EVP_DigestSignInit whatever EVP_MD is passed). That part of the gap is inherent;
// what is avoidable is not done here: no digest lookup by name, no EVP_PKEY_CTX_dup at final (FINALISE), no
// size-query call, no copy of the signing input.
extension EVPKey {
    /// Signs `message` for `algorithm` (which the caller has checked with `validate(for:)`); ECDSA comes back as R‖S.
    func sign(_ message: UnsafeRawBufferPointer, algorithm: JWSAlgorithm) throws(OpenSSLError) -> [UInt8] {
        // EVP_PKEY_get_size is the largest signature the key makes (DER ECDSA may come out shorter): one call
        // instead of asking EVP_DigestSign for the size first.
        let capacity = Int(EVP_PKEY_get_size(pointer))
        guard capacity > 0 else { throw OpenSSLError.drain("EVP_PKEY_get_size") }
        var signature = [UInt8](repeating: 0, count: capacity)
        var length = capacity
        try withDigestContext(algorithm: algorithm, signing: true) { context throws(OpenSSLError) in
            try signature.withUnsafeMutableBufferPointer { output throws(OpenSSLError) in
                let result = EVP_DigestSign(context, output.baseAddress, &length, message.baseAddress, message.count)
                try check(result, "EVP_DigestSign")
            }
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
        let result = try? withDigestContext(algorithm: algorithm, signing: false) { context throws(OpenSSLError) in
            wire.withUnsafeBufferPointer { sig in
                EVP_DigestVerify(context, sig.baseAddress, sig.count, message.baseAddress, message.count)
            }
        }
        return result == 1
    }

    // A fresh EVP_MD_CTX per operation: contexts are not thread-safe, the shared EVP_PKEY and EVP_MD are.
    private func withDigestContext<Result>(
        algorithm: JWSAlgorithm,
        signing: Bool,
        _ body: (OpaquePointer) throws(OpenSSLError) -> Result
    ) throws(OpenSSLError) -> Result {
        let digest = MessageDigest.forAlgorithm(algorithm)
        // Only EdDSA signs without a digest: a missing one elsewhere must fail, not pick a default.
        guard digest != nil || algorithm == .edDSA else {
            throw OpenSSLError(operation: "digest", details: ["\(algorithm) has no digest"])
        }
        guard let context = EVP_MD_CTX_new() else { throw OpenSSLError.drain("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        // One signature per context: without this flag EVP_DigestSign/VerifyFinal duplicate the whole key
        // context on every call so that the caller could go on hashing.
        EVP_MD_CTX_set_flags(context, EVP_MD_CTX_FLAG_FINALISE)
        // get0-style: the EVP_PKEY_CTX is owned by the EVP_MD_CTX and freed with it.
        var keyContext: OpaquePointer?
        if signing {
            try check(EVP_DigestSignInit(context, &keyContext, digest?.pointer, nil, pointer), "EVP_DigestSignInit")
        } else {
            try check(EVP_DigestVerifyInit(context, &keyContext, digest?.pointer, nil, pointer), "EVP_DigestVerifyInit")
        }
        if algorithm.family == .rsaPSS {
            // Never fall back to PKCS#1 v1.5 padding silently: PSS must be configured or the operation fails.
            guard let keyContext, let digest else {
                throw OpenSSLError(operation: "RSA-PSS setup", details: ["no key context"])
            }
            // RFC 7518 section 3.5: salt as long as the digest, MGF1 with the same hash.
            try check(EVP_PKEY_CTX_set_rsa_padding(keyContext, RSA_PKCS1_PSS_PADDING), "EVP_PKEY_CTX_set_rsa_padding")
            try check(EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, RSA_PSS_SALTLEN_DIGEST), "set_rsa_pss_saltlen")
            try check(EVP_PKEY_CTX_set_rsa_mgf1_md(keyContext, digest.pointer), "EVP_PKEY_CTX_set_rsa_mgf1_md")
        }
        return try body(context)
    }
}
