/// Reads the credential out of an `Authorization` header value, strictly: `Bearer <credential>`, the scheme in any
/// case, one space, one credential of visible ASCII no longer than ``maxBytes``.
enum BearerCredential {
    /// The longest credential accepted, in bytes. Session JWTs of real identity providers stay far below.
    static let maxBytes = 8 * 1024

    /// The credential, or `unauthenticated` with a reason that never quotes the header.
    static func parse(_ header: String?) throws(TokenGateError) -> String {
        guard let header, !header.isEmpty else { throw TokenGateError(.unauthenticated, "no credential") }
        let bytes = header.utf8
        // Checked before scanning, so an oversized header costs nothing more.
        guard bytes.count <= "Bearer ".utf8.count + maxBytes else {
            throw TokenGateError(.unauthenticated, "credential longer than \(maxBytes) bytes")
        }
        guard let space = bytes.firstIndex(of: UInt8(ascii: " ")) else {
            throw TokenGateError(.unauthenticated, "malformed Authorization header: expected 'Bearer <credential>'")
        }
        guard isBearer(bytes[..<space]) else {
            throw TokenGateError(.unauthenticated, "unsupported Authorization scheme: expected Bearer")
        }
        let credential = bytes[bytes.index(after: space)...]
        guard !credential.isEmpty, credential.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw TokenGateError(.unauthenticated, "malformed Authorization header: expected one Bearer credential")
        }
        guard credential.count <= maxBytes else {
            throw TokenGateError(.unauthenticated, "credential longer than \(maxBytes) bytes")
        }
        return String(decoding: credential, as: UTF8.self)
    }

    /// Whether `credential` has the shape of a compact JWS: three dot-separated base64url segments, the first two
    /// non-empty. (An empty third one, as `alg: none` tokens have, still counts, so they fail as session tokens.)
    static func isCompactJWS(_ credential: String) -> Bool {
        var dots = 0
        var segmentLength = 0
        for byte in credential.utf8 {
            if byte == UInt8(ascii: ".") {
                guard segmentLength > 0, dots < 2 else { return false }
                dots += 1
                segmentLength = 0
            } else if isBase64URL(byte) {
                segmentLength += 1
            } else {
                return false
            }
        }
        return dots == 2
    }

    private static func isBearer(_ scheme: Substring.UTF8View) -> Bool {
        let expected = "bearer".utf8
        guard scheme.count == expected.count else { return false }
        // ASCII case folding: OR-ing 0x20 lower-cases letters; the expected bytes are all letters.
        return zip(scheme, expected).allSatisfy { $0 | 0x20 == $1 }
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }
}
