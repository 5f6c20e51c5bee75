internal import Foundation

/// The `exp` claim of a compact JWS, read without verification: the client cannot verify and only uses it to
/// cross-check a legacy body's expiry.
enum JWTClaims {
    static func expiry(ofToken token: String) -> Date? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = base64URLDecode(parts[1]),
            let exp = DecodedJSON.object(payload)?["exp"], case .number(let seconds) = exp, seconds.isFinite
        else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }

    /// base64url without padding (RFC 7515 §2), mapped byte by byte: `FoundationEssentials` lacks
    /// `replacingOccurrences(of:with:)`.
    static func base64URLDecode(_ text: Substring) -> Data? {
        var bytes = [UInt8]()
        bytes.reserveCapacity(text.utf8.count + 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"): bytes.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): bytes.append(UInt8(ascii: "/"))
            case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="): return nil
            default: bytes.append(byte)
            }
        }
        if bytes.count % 4 == 1 { return nil }
        while bytes.count % 4 != 0 { bytes.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(bytes))
    }
}
