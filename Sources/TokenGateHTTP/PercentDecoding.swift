import OpenSSLPrimitives

/// Percent-decoding as browsers encode URLs (the WHATWG URL Standard), for query values and path segments alike.
///
/// Each `%XX` is one byte of UTF-8; a `%` not followed by two hex digits stays as it is (the standard's
/// percent-decode keeps it too). In a query, `+` is a space, as `application/x-www-form-urlencoded` and
/// `URLSearchParams` write one (and `%2B` a plus); in a path, `+` is itself. The bytes must be UTF-8: nothing is
/// repaired, since a repaired ID would be another ID.
///
/// ```swift
/// PercentDecoding.text(of: "p1+space", plusIsSpace: true)        // "p1 space"
/// PercentDecoding.text(of: "caf%C3%A9", plusIsSpace: false)      // "café"
/// PercentDecoding.text(of: "%FF", plusIsSpace: false)            // nil: not UTF-8
/// ```
enum PercentDecoding {
    /// Whether `text` needs ``text(of:plusIsSpace:)`` at all: nothing to decode (the usual ID) is taken as it is.
    static func needsDecoding(_ text: Substring, plusIsSpace: Bool) -> Bool {
        text.utf8.contains { byte in byte == UInt8(ascii: "%") || (plusIsSpace && byte == UInt8(ascii: "+")) }
    }

    /// `text` decoded, or nil when its bytes are not UTF-8. (A request target holds ASCII only: the HTTP parser
    /// refuses a raw byte above 0x7F with `400 bad_request`, so every other byte arrives percent-encoded.)
    static func text(of text: Substring, plusIsSpace: Bool) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var rest = text.utf8[...]
        while let byte = rest.popFirst() {
            switch byte {
            case UInt8(ascii: "%"):
                let digits = rest.prefix(2)
                if digits.count == 2, let high = HexBytes.digitValue(digits.first!), let low = HexBytes.digitValue(digits.last!) {
                    bytes.append(high << 4 | low)
                    rest = rest.dropFirst(2)
                } else {
                    bytes.append(byte)
                }
            case UInt8(ascii: "+") where plusIsSpace:
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
