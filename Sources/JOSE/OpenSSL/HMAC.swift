internal import COpenSSL
import OpenSSLPrimitives

/// HMAC through OpenSSL's EVP_MAC (its verification compares with `ConstantTime`).
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
}
