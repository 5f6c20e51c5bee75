internal import COpenSSL

extension EVPKey {
    /// Signs `message` for `algorithm` (which the caller has checked with `validate(for:)`); ECDSA comes back as R‖S.
    func sign(_ message: [UInt8], algorithm: JWSAlgorithm) throws(OpenSSLError) -> [UInt8] {
        try withDigestContext(algorithm: algorithm, signing: true) { context throws(OpenSSLError) in
            var length = 0
            try message.withUnsafeBufferPointer { input throws(OpenSSLError) in
                try check(EVP_DigestSign(context, nil, &length, input.baseAddress, input.count), "EVP_DigestSign")
            }
            var signature = [UInt8](repeating: 0, count: length)
            try message.withUnsafeBufferPointer { input throws(OpenSSLError) in
                try check(EVP_DigestSign(context, &signature, &length, input.baseAddress, input.count), "EVP_DigestSign")
            }
            signature.removeLast(signature.count - length)
            guard case .ec(let curve) = kind else { return signature }
            return try ECDSASignature.raw(fromDER: signature, curve: curve)
        }
    }

    /// True only for a valid signature; never throws, and leaves the error queue empty.
    func isValidSignature(_ signature: [UInt8], for message: [UInt8], algorithm: JWSAlgorithm) -> Bool {
        // A verify failure is an answer, not an error: whatever OpenSSL queued is dropped.
        defer { OpenSSLError.clearQueue() }
        var wire = signature
        if case .ec(let curve) = kind {
            guard let der = ECDSASignature.der(fromRaw: signature, curve: curve) else { return false }
            wire = der
        }
        let result = try? withDigestContext(algorithm: algorithm, signing: false) { context throws(OpenSSLError) in
            message.withUnsafeBufferPointer { input in
                wire.withUnsafeBufferPointer { sig in
                    EVP_DigestVerify(context, sig.baseAddress, sig.count, input.baseAddress, input.count)
                }
            }
        }
        return result == 1
    }

    // A fresh EVP_MD_CTX per operation: contexts are not thread-safe, the shared EVP_PKEY is.
    private func withDigestContext<Result>(
        algorithm: JWSAlgorithm,
        signing: Bool,
        _ body: (OpaquePointer) throws(OpenSSLError) -> Result
    ) throws(OpenSSLError) -> Result {
        guard let context = EVP_MD_CTX_new() else { throw OpenSSLError.drain("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        // EVP_get_digestbyname returns a static table entry: nothing to free.
        let digest = algorithm.digestName.flatMap { EVP_get_digestbyname($0) }
        // get0-style: the EVP_PKEY_CTX is owned by the EVP_MD_CTX and freed with it.
        var keyContext: OpaquePointer?
        if signing {
            try check(EVP_DigestSignInit(context, &keyContext, digest, nil, pointer), "EVP_DigestSignInit")
        } else {
            try check(EVP_DigestVerifyInit(context, &keyContext, digest, nil, pointer), "EVP_DigestVerifyInit")
        }
        if algorithm.family == .rsaPSS, let keyContext {
            // RFC 7518 section 3.5: salt as long as the digest, MGF1 with the same hash.
            try check(EVP_PKEY_CTX_set_rsa_padding(keyContext, RSA_PKCS1_PSS_PADDING), "EVP_PKEY_CTX_set_rsa_padding")
            try check(EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, RSA_PSS_SALTLEN_DIGEST), "set_rsa_pss_saltlen")
            try check(EVP_PKEY_CTX_set_rsa_mgf1_md(keyContext, digest), "EVP_PKEY_CTX_set_rsa_mgf1_md")
        }
        return try body(context)
    }
}
