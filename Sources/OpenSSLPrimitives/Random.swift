internal import COpenSSL

/// Random bytes from OpenSSL's CSPRNG.
package enum Random {
    package static func bytes(_ count: Int) throws(OpenSSLError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        try check(RAND_bytes(&output, Int32(count)), "RAND_bytes")
        return output
    }
}
