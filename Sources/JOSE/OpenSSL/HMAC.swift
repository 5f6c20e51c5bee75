internal import COpenSSL

/// HMAC through OpenSSL's EVP_MAC, and the constant-time comparison its verification needs.
enum HMAC {
    static func authenticate(
        _ message: UnsafeRawBufferPointer,
        secret: [UInt8],
        algorithm: JWSAlgorithm
    ) throws(OpenSSLError) -> [UInt8] {
        guard algorithm.isSymmetric, let digest = algorithm.digestName else {
            throw OpenSSLError(operation: "HMAC", details: ["\(algorithm) is not an HMAC algorithm"])
        }
        var output = [UInt8](repeating: 0, count: algorithm.digestLength)
        var length = 0
        let result = secret.withUnsafeBufferPointer { key in
            EVP_Q_mac(
                nil, "HMAC", nil, digest, nil, key.baseAddress, key.count, message.baseAddress, message.count,
                &output, output.count, &length
            )
        }
        guard result != nil, length == output.count else { throw OpenSSLError.drain("EVP_Q_mac") }
        return output
    }

    /// Compares in constant time, so timing does not reveal how many leading bytes of a forged MAC were right.
    /// Lengths are not secret; two empty strings are equal.
    static func isEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        guard !lhs.isEmpty else { return true }
        return lhs.withUnsafeBytes { a in
            rhs.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }
}
