/// An RFC 7519 NumericDate claim (`exp`, `nbf`, `iat`): epoch seconds, an integer or a JSON number with a fraction
/// (`1300819380.5`, as RFC 7519 section 2 allows).
///
/// The claim checks work in whole seconds. A fractional value is held as the two whole seconds around it, and each
/// check takes the one that makes the token less acceptable, so a fraction never extends validity:
/// - `exp` counts from `floor` (`exp` 100.5 acts as 100: expired from second 100 on);
/// - `nbf` and "`iat` is in the future" count from `ceiling` (`nbf` 100.5 acts as 101);
/// - the lifetime is `exp.floor - iat.floor`: with `exp` already rounded down, this is the longest the token
///   can be valid after it was issued.
///
/// Refused as `malformed`: a non-number, a negative value, and anything after 9999-12-31T23:59:59Z (JSON that
/// overflows a Double never gets this far: the parser refuses it).
public struct NumericDate: Sendable, Hashable {
    /// The latest accepted value, 9999-12-31T23:59:59Z: beyond any real token, and small enough that whole-second
    /// arithmetic on two dates can never overflow.
    public static let maximum: Int64 = 253_402_300_799

    /// The whole second at or before the value.
    public let floor: Int64
    /// The whole second at or after the value; equal to `floor` for an integer.
    public let ceiling: Int64

    /// Reads the claim `name` (used in messages only). Throws `malformed` for anything but a number in
    /// 0...``maximum``.
    public init(_ value: JSONValue, claim name: String) throws(JWTValidationError) {
        switch value {
        case .integer(let seconds):
            try Self.checkRange(seconds >= 0, seconds <= Self.maximum, claim: name)
            floor = seconds
            ceiling = seconds
        case .double(let seconds):
            // `isFinite` first: NaN compares false with everything and would slip past the range check.
            guard seconds.isFinite else {
                throw JWTValidationError(.malformed, "The \"\(name)\" claim is not a finite number.")
            }
            try Self.checkRange(seconds >= 0, seconds <= Double(Self.maximum), claim: name)
            floor = Int64(seconds.rounded(.down))
            ceiling = Int64(seconds.rounded(.up))
        default:
            throw JWTValidationError(.malformed, "The \"\(name)\" claim is not a number (NumericDate).")
        }
    }

    private static func checkRange(_ isNotNegative: Bool, _ isNotTooLate: Bool, claim name: String)
        throws(JWTValidationError)
    {
        guard isNotNegative else { throw JWTValidationError(.malformed, "The \"\(name)\" claim is negative.") }
        guard isNotTooLate else {
            throw JWTValidationError(.malformed, "The \"\(name)\" claim is after 9999-12-31T23:59:59Z.")
        }
    }
}
