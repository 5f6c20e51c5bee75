/// A provider's ID: the tenant's Google Cloud project ID, which Fleet Engine calls `providerID`.
///
/// Validated once, typed ever after. Google's rules: 6 to 30 characters, lower-case ASCII letters, digits and
/// hyphens, starting with a letter and not ending with a hyphen.
public struct ProviderID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The project ID as written in `config.yaml` and request paths.
    public let rawValue: String

    /// Returns `nil` unless `rawValue` is a well-formed Google Cloud project ID.
    public init?(_ rawValue: String) {
        let bytes = Array(rawValue.utf8)
        guard (6...30).contains(bytes.count),
            let first = bytes.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first),
            bytes.last != UInt8(ascii: "-"),
            bytes.allSatisfy({ Self.isAllowed($0) })
        else { return nil }
        self.rawValue = rawValue
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"): true
        default: false
        }
    }

    public var description: String { rawValue }

    public static func < (lhs: ProviderID, rhs: ProviderID) -> Bool { lhs.rawValue < rhs.rawValue }
}
