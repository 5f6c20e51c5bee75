internal import COpenSSL

/// Message digests through OpenSSL's EVP interface.
public enum Digest {
    /// SHA-256 of `bytes` (32 bytes).
    public static func sha256(_ bytes: [UInt8]) throws -> [UInt8] {
        try bytes.withUnsafeBytes { try digest($0, .sha256, length: 32, name: "SHA-256") }
    }

    /// SHA-256 of the bytes `bytes` points to (32 bytes): a string's UTF-8 is hashed where it lies, not copied first.
    public static func sha256(_ bytes: UnsafeRawBufferPointer) throws -> [UInt8] {
        try digest(bytes, .sha256, length: 32, name: "SHA-256")
    }

    /// SHA-1 of `bytes` (20 bytes). Not for security: SHA-1 is broken for collisions. It is here because Redis names
    /// a cached script by its SHA-1 (`EVALSHA`), and OpenSSL does every digest in this project.
    public static func sha1(_ bytes: [UInt8]) throws -> [UInt8] {
        try bytes.withUnsafeBytes { try digest($0, .sha1, length: 20, name: "SHA-1") }
    }

    private static func digest(_ input: UnsafeRawBufferPointer, _ algorithm: MessageDigest, length expected: Int, name: String) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: expected)
        var length: UInt32 = 0
        let result = EVP_Digest(input.baseAddress, input.count, &output, &length, algorithm.pointer, nil)
        guard result == 1, length == expected else { throw OpenSSLError.drain("EVP_Digest(\(name))") }
        return output
    }
}

/// Secrets compared without leaking, through timing, how much of a guess was right.
public enum ConstantTime {
    /// Whether two byte strings are equal, in time that depends only on their length. Strings of different
    /// lengths are unequal at once (the length is not secret); two empty strings are equal.
    public static func isEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        guard !lhs.isEmpty else { return true }
        return lhs.withUnsafeBytes { a in
            rhs.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }
}

/// Random bytes from OpenSSL's CSPRNG, for key IDs and generated API keys.
public enum SecureRandom {
    /// `count` random bytes.
    public static func bytes(count: Int) throws -> [UInt8] {
        try Random.bytes(count)
    }
}
