internal import Foundation

/// One JSON value of a flat object, decoded strictly: `true` is never a number and `"3600"` never a bool.
enum JSONValue: Decodable, Sendable {
    case null, bool(Bool), number(Double), string(String), nested

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else {
            self = .nested  // an array or object: never a token or an expiry
        }
    }

    /// A number, or a string holding one (some legacy servers quote their timestamps).
    var number: Double? {
        switch self {
        case .number(let value): value.isFinite ? value : nil
        case .string(let text): Double(text.trimmingCharacters(in: .whitespaces)).flatMap { $0.isFinite ? $0 : nil }
        default: nil
        }
    }

    var string: String? {
        if case .string(let value) = self { value } else { nil }
    }

    /// Decodes a JSON object's top level, or `nil` if `data` is not one.
    static func object(_ data: Data) -> [String: JSONValue]? {
        try? JSONDecoder().decode([String: JSONValue].self, from: data)
    }
}

/// The `exp` claim of a compact JWS, read without verification: the client cannot verify and only uses it to
/// cross-check a legacy body's expiry.
enum JWTClaims {
    static func expiry(ofToken token: String) -> Date? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = base64URLDecode(parts[1]),
            let exp = JSONValue.object(payload)?["exp"], case .number(let seconds) = exp, seconds.isFinite
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
