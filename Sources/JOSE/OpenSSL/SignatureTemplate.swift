internal import COpenSSL
import OpenSSLPrimitives

/// One key's context for one algorithm and direction, set up once and never used directly: every operation
/// works on a duplicate of it.
///
/// Setting up a context costs OpenSSL 3.0 several microseconds per call (EVP_DigestSignInit re-fetches the
/// digest and the signature method and builds the key context) where a duplicate is a few reference-count bumps
/// and one small allocation. RSA and ECDSA hash with the cached `EVP_MD` and sign or verify the digest with a
/// duplicated `EVP_PKEY_CTX`, which measured faster than copying an `EVP_MD_CTX`; Ed25519 hashes inside the
/// signature, so it copies a `EVP_MD_CTX` through EVP_DigestSignInit/EVP_DigestVerifyInit instead.
///
/// Thread safety: the template is written only here in init, before it is published (under the key's lock).
/// EVP_PKEY_CTX_dup and EVP_MD_CTX_copy_ex only read their source (provider `dupctx` copies the fields and
/// up-references the key, method and digest with atomic counters), so any number of threads may duplicate the
/// same template at once (openssl-threads(7): a function may share an object it takes as const).
final class SignatureTemplate: @unchecked Sendable {
    private enum Context {
        /// RSA/ECDSA: through EVP_PKEY_sign_init or EVP_PKEY_verify_init, digest (and PSS padding) set.
        case key(OpaquePointer, digest: MessageDigest)
        /// Ed25519: an EVP_MD_CTX through EVP_DigestSignInit or EVP_DigestVerifyInit.
        case digestSign(OpaquePointer)
    }

    private let context: Context

    init(key: EVPKey, algorithm: JWSAlgorithm, signing: Bool) throws(OpenSSLError) {
        guard let digest = MessageDigest.forAlgorithm(algorithm) else {
            // Only EdDSA signs without a digest: a missing one elsewhere must fail, not pick a default.
            guard algorithm == .edDSA else {
                throw OpenSSLError(operation: "digest", details: ["\(algorithm) has no digest"])
            }
            guard let context = EVP_MD_CTX_new() else { throw OpenSSLError.drain("EVP_MD_CTX_new") }
            // One signature per copy: without this flag a final would duplicate the key context again.
            EVP_MD_CTX_set_flags(context, EVP_MD_CTX_FLAG_FINALISE)
            let result =
                signing
                ? EVP_DigestSignInit(context, nil, nil, nil, key.pointer)
                : EVP_DigestVerifyInit(context, nil, nil, nil, key.pointer)
            guard result == 1 else {
                EVP_MD_CTX_free(context)
                throw OpenSSLError.drain(signing ? "EVP_DigestSignInit" : "EVP_DigestVerifyInit")
            }
            self.context = .digestSign(context)
            return
        }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil) else {
            throw OpenSSLError.drain("EVP_PKEY_CTX_new_from_pkey")
        }
        do throws(OpenSSLError) {
            if signing {
                try check(EVP_PKEY_sign_init(context), "EVP_PKEY_sign_init")
            } else {
                try check(EVP_PKEY_verify_init(context), "EVP_PKEY_verify_init")
            }
            // Padding before the digest: PSS accepts more digests than PKCS#1 v1.5 would.
            if algorithm.family == .rsaPSS {
                // Never fall back to PKCS#1 v1.5 padding silently: PSS must be configured or the setup fails.
                // RFC 7518 section 3.5: salt as long as the digest, MGF1 with the same hash.
                try check(EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PSS_PADDING), "set_rsa_padding")
                try check(EVP_PKEY_CTX_set_rsa_pss_saltlen(context, RSA_PSS_SALTLEN_DIGEST), "set_rsa_pss_saltlen")
                try check(EVP_PKEY_CTX_set_rsa_mgf1_md(context, digest.pointer), "set_rsa_mgf1_md")
            }
            try check(EVP_PKEY_CTX_set_signature_md(context, digest.pointer), "EVP_PKEY_CTX_set_signature_md")
        } catch {
            EVP_PKEY_CTX_free(context)
            throw error
        }
        self.context = .key(context, digest: digest)
    }

    deinit {
        switch context {
        case .key(let context, _): EVP_PKEY_CTX_free(context)
        case .digestSign(let context): EVP_MD_CTX_free(context)
        }
    }

    /// Signs `message` into `output` (at least EVP_PKEY_get_size bytes); returns the signature's length.
    func sign(_ message: UnsafeRawBufferPointer, into output: UnsafeMutableBufferPointer<UInt8>) throws(OpenSSLError)
        -> Int
    {
        var length = output.count
        switch context {
        case .key(let template, let digest):
            try withDigest(of: message, digest: digest) { hash throws(OpenSSLError) in
                guard let context = EVP_PKEY_CTX_dup(template) else { throw OpenSSLError.drain("EVP_PKEY_CTX_dup") }
                defer { EVP_PKEY_CTX_free(context) }
                let result = EVP_PKEY_sign(context, output.baseAddress, &length, hash.baseAddress, hash.count)
                try check(result, "EVP_PKEY_sign")
            }
        case .digestSign(let template):
            let context = try copy(template)
            defer { EVP_MD_CTX_free(context) }
            let result = EVP_DigestSign(context, output.baseAddress, &length, message.baseAddress, message.count)
            try check(result, "EVP_DigestSign")
        }
        return length
    }

    /// OpenSSL's answer: 1 for a valid signature; anything else (0, negative, a setup failure) is not.
    func verify(_ signature: UnsafeBufferPointer<UInt8>, for message: UnsafeRawBufferPointer) -> Int32 {
        switch context {
        case .key(let template, let digest):
            let result = try? withDigest(of: message, digest: digest) { hash throws(OpenSSLError) -> Int32 in
                guard let context = EVP_PKEY_CTX_dup(template) else { return 0 }
                defer { EVP_PKEY_CTX_free(context) }
                return EVP_PKEY_verify(context, signature.baseAddress, signature.count, hash.baseAddress, hash.count)
            }
            return result ?? 0
        case .digestSign(let template):
            guard let context = try? copy(template) else { return 0 }
            defer { EVP_MD_CTX_free(context) }
            return EVP_DigestVerify(context, signature.baseAddress, signature.count, message.baseAddress, message.count)
        }
    }

    // The hash on the stack: EVP_MAX_MD_SIZE is 64 bytes.
    private func withDigest<Result>(
        of message: UnsafeRawBufferPointer,
        digest: MessageDigest,
        _ body: (UnsafeBufferPointer<UInt8>) throws(OpenSSLError) -> Result
    ) throws(OpenSSLError) -> Result {
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(EVP_MAX_MD_SIZE)) {
            hash throws(OpenSSLError) -> Result in
            var length: UInt32 = 0
            let result = EVP_Digest(message.baseAddress, message.count, hash.baseAddress, &length, digest.pointer, nil)
            try check(result, "EVP_Digest")
            return try body(UnsafeBufferPointer(rebasing: hash[..<Int(length)]))
        }
    }

    private func copy(_ template: OpaquePointer) throws(OpenSSLError) -> OpaquePointer {
        guard let context = EVP_MD_CTX_new() else { throw OpenSSLError.drain("EVP_MD_CTX_new") }
        guard EVP_MD_CTX_copy_ex(context, template) == 1 else {
            EVP_MD_CTX_free(context)
            throw OpenSSLError.drain("EVP_MD_CTX_copy_ex")
        }
        return context
    }
}
