internal import COpenSSL

/// Keyed-hash message authentication codes (RFC 2104) through OpenSSL's EVP_MAC interface.
///
/// ```swift
/// let signature = try HMAC.sha256(key: Array("key".utf8), Array("message".utf8))   // 32 bytes
/// ```
public enum HMAC {
    /// HMAC-SHA256 of `message` under `key` (32 bytes). AWS Signature Version 4 chains four of these to derive its
    /// signing key, then one more for the signature.
    public static func sha256(key: [UInt8], _ message: [UInt8]) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length = 0
        // EVP_Q_mac fetches HMAC and SHA-256 from the default provider per call: a handful of calls per token fetch,
        // so the fetch costs nothing that matters, and nothing is kept between calls.
        let result = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBufferPointer { messageBytes in
                EVP_Q_mac(
                    nil, "HMAC", nil, "SHA256", nil, keyBytes.baseAddress, keyBytes.count, messageBytes.baseAddress,
                    messageBytes.count, &output, output.count, &length)
            }
        }
        guard result != nil, length == 32 else { throw OpenSSLError.drain("EVP_Q_mac(HMAC-SHA256)") }
        return output
    }
}
