/// A trip, vehicle, task or tracking ID that a token is scoped to.
///
/// Fleet Engine IDs are at most 64 characters and may not contain `/`, `:`, `?`, `#` or `\`. TokenGate is
/// stricter, because IDs travel in URLs, cache keys and logs: 1 to 64 ASCII letters, digits and `-_.~@+=`.
/// `*` can never be a context ID, so a client token can never become a wildcard token.
public struct ContextID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The longest ID accepted.
    public static let maxLength = 64

    /// The ID as the app sent it.
    public let rawValue: String

    /// Returns `nil` unless `rawValue` is a well-formed context ID.
    public init?(_ rawValue: String) {
        let bytes = rawValue.utf8
        guard (1...Self.maxLength).contains(bytes.count), bytes.allSatisfy(Self.isAllowed) else { return nil }
        self.rawValue = rawValue
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "@"),
            UInt8(ascii: "+"), UInt8(ascii: "="):
            true
        default: false
        }
    }

    public var description: String { rawValue }

    public static func < (lhs: ContextID, rhs: ContextID) -> Bool { lhs.rawValue < rhs.rawValue }
}
