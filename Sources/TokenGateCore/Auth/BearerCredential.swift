/// Reads the credential out of an `Authorization` header value, strictly: `Bearer <credential>`, the scheme in any
/// case, one space, one credential of visible ASCII no longer than ``maxBytes``.
enum BearerCredential {
    /// The longest credential accepted, in bytes. Session JWTs of real identity providers stay far below.
    static let maxBytes = 8 * 1024

    /// The credential, or `unauthenticated` with a reason that never quotes the header.
    static func parse(_ header: String?) throws(TokenGateError) -> String {
        guard var header, !header.isEmpty else { throw TokenGateError(.unauthenticated, "no credential") }
        // One pass over the contiguous UTF-8 (free for a native string): String index arithmetic per byte was a
        // visible share of a cached request's CPU for an 800-byte session token.
        let result = header.withUTF8 { bytes -> Result<String, TokenGateError> in
            // Checked before scanning, so an oversized header costs nothing more.
            guard bytes.count <= "Bearer ".utf8.count + maxBytes else {
                return .failure(TokenGateError(.unauthenticated, "credential longer than \(maxBytes) bytes"))
            }
            guard let space = bytes.firstIndex(of: UInt8(ascii: " ")) else {
                return .failure(TokenGateError(.unauthenticated, "malformed Authorization header: expected 'Bearer <credential>'"))
            }
            guard isBearer(UnsafeBufferPointer(rebasing: bytes[..<space])) else {
                return .failure(TokenGateError(.unauthenticated, "unsupported Authorization scheme: expected Bearer"))
            }
            let credential = UnsafeBufferPointer(rebasing: bytes[(space + 1)...])
            guard !credential.isEmpty, isVisibleASCII(credential) else {
                return .failure(TokenGateError(.unauthenticated, "malformed Authorization header: expected one Bearer credential"))
            }
            guard credential.count <= maxBytes else {
                return .failure(TokenGateError(.unauthenticated, "credential longer than \(maxBytes) bytes"))
            }
            return .success(String(decoding: credential, as: UTF8.self))
        }
        return try result.get()
    }

    /// Whether `credential` has the shape of a compact JWS: three dot-separated base64url segments, the first two
    /// non-empty. (An empty third one, as `alg: none` tokens have, still counts, so they fail as session tokens.)
    static func isCompactJWS(_ credential: String) -> Bool {
        var credential = credential
        return credential.withUTF8 { bytes in
            // One pass of compares and masks, no branch or table load per byte, so the compiler vectorises it 16
            // bytes at a time (a session token is ~700 bytes, and a per-byte loop showed in a jwt caller's profile).
            // Dots are counted in byte-wide lanes, so a block is at most 255 bytes.
            var outside: UInt8 = 0
            var dots = 0
            var blockStart = 0
            while blockStart < bytes.count {
                let blockEnd = min(blockStart + 255, bytes.count)
                var blockDots: UInt8 = 0
                for index in blockStart..<blockEnd {
                    let byte = bytes[index]
                    let digit: UInt8 = byte &- UInt8(ascii: "0") < 10 ? 1 : 0
                    // OR-ing 0x20 lower-cases a letter; nothing else lands in a-z.
                    let letter: UInt8 = (byte | 0x20) &- UInt8(ascii: "a") < 26 ? 1 : 0
                    let dash: UInt8 = byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") ? 1 : 0
                    let dot: UInt8 = byte == UInt8(ascii: ".") ? 1 : 0
                    outside |= 1 &- (digit | letter | dash | dot)
                    blockDots &+= dot
                }
                dots += Int(blockDots)
                blockStart = blockEnd
            }
            guard outside == 0, dots == 2, let first = bytes.firstIndex(of: UInt8(ascii: ".")) else { return false }
            // With two dots, one follows the first: the first two segments are empty when a dot starts the
            // credential or follows the first at once.
            return first > 0 && bytes[first + 1] != UInt8(ascii: ".")
        }
    }

    // Branch-free over the whole credential (no early exit), so the compiler can vectorise it.
    private static func isVisibleASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var invalid: UInt8 = 0
        for byte in bytes { invalid |= (byte &- 0x21) > (0x7E - 0x21) ? 1 : 0 }
        return invalid == 0
    }

    private static func isBearer(_ scheme: UnsafeBufferPointer<UInt8>) -> Bool {
        let expected = "bearer".utf8
        guard scheme.count == expected.count else { return false }
        // ASCII case folding: OR-ing 0x20 lower-cases letters; the expected bytes are all letters.
        return zip(scheme, expected).allSatisfy { $0 | 0x20 == $1 }
    }

}

/// A credential read from an `Authorization` header, once: an API key is kept only as its SHA-256 (the one hash
/// the request costs, also used to tell another tenant's key), a session token as sent.
package enum CallerCredential: Sendable {
    /// An API key's SHA-256 digest.
    case apiKey(digest: [UInt8])
    /// A session JWT (three base64url segments).
    case sessionToken(String)

    /// Parses `Bearer <credential>`; throws `unauthenticated` for a missing or malformed header.
    package init(authorization: String?) throws(TokenGateError) {
        let credential = try BearerCredential.parse(authorization)
        if BearerCredential.isCompactJWS(credential) {
            self = .sessionToken(credential)
        } else {
            self = .apiKey(digest: try CallerAuthenticator.sha256(credential))
        }
    }
}
