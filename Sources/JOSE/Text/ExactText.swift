/// RFC 7519 section 7.3 and RFC 8259 section 8.3 compare strings code point by code point. Swift's `==` on String
/// uses Unicode canonical equivalence ("e\u{301}" == "é", "\u{212A}" == "K"), which would let a different name,
/// issuer or key ID match; these helpers compare the UTF-8 bytes instead.
extension String {
    /// True when both strings have exactly the same Unicode scalars (no normalization).
    func hasSameCodePoints(as other: String) -> Bool {
        // Compares the contiguous UTF-8 storage directly: claim and member lookups run this on every token.
        var lhs = self
        var rhs = other
        return lhs.withUTF8 { left in rhs.withUTF8 { right in left.elementsEqual(right) } }
    }

    /// Lowercases ASCII A–Z only (never Unicode case mapping) and compares the bytes.
    func isASCIICaseInsensitiveEqual(to other: String) -> Bool {
        utf8.count == other.utf8.count
            && zip(utf8, other.utf8).allSatisfy { asciiLowercase($0) == asciiLowercase($1) }
    }
}

private func asciiLowercase(_ byte: UInt8) -> UInt8 {
    (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
}

/// A String key whose equality and hash are its exact UTF-8 bytes, for sets that must not merge canonically
/// equivalent names (JSON member names, key IDs).
struct ExactText: Hashable {
    let text: String

    init(_ text: String) { self.text = text }

    static func == (lhs: ExactText, rhs: ExactText) -> Bool { lhs.text.hasSameCodePoints(as: rhs.text) }

    func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
