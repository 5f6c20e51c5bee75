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
        // The table is read once here: read per byte, its lazy global's swift_once check cost more than the scan.
        return jwsByteClass.withUnsafeBufferPointer { byteClass in
            credential.withUTF8 { bytes in
                // One pass without a branch per byte (a session token is ~700 bytes): any byte outside the alphabet
                // sets bit 2, each dot adds 1.
                var outside: UInt8 = 0
                var dots = 0
                for byte in bytes {
                    let kind = byteClass[Int(byte)]
                    outside |= kind
                    dots &+= Int(kind & 1)
                }
                guard outside & 2 == 0, dots == 2, let first = bytes.firstIndex(of: UInt8(ascii: ".")) else { return false }
                // With two dots, one follows the first: the first two segments are empty when a dot starts the
                // credential or follows the first at once.
                return first > 0 && bytes[first + 1] != UInt8(ascii: ".")
            }
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

    // A table, made once: one load per byte instead of five range checks. 0: base64url, 1: a dot, 2: anything else.
    private static let jwsByteClass: [UInt8] = (0...255).map { (byte: Int) -> UInt8 in
        switch UInt8(byte) {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            0
        case UInt8(ascii: "."): 1
        default: 2
        }
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
