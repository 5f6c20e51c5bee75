#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one reader of `Retry-After` (RFC 9110 §10.2.3) for every answer TokenGate gets from another server.
///
/// The rule, whoever asks:
/// - surrounding spaces and tabs are ignored;
/// - delay-seconds, one or more ASCII digits and nothing else, is that many seconds;
/// - an HTTP-date in any of the three forms RFC 9110 §5.6.7 makes recipients accept (IMF-fixdate
///   `Sun, 06 Nov 1994 08:49:37 GMT`, the obsolete RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`, whose two-digit year is
///   1970 to 2069, and asctime `Sun Nov  6 08:49:37 1994`) is the seconds from now until then, zero when it has passed;
/// - anything else (a sign, a fraction, a unit, another date format, an empty value) is no hint at all: `nil`;
/// - every hint is at most ``maximumSeconds``, so a server cannot ask for a wait (or a `Retry-After` passed on to a
///   caller) longer than a day, and a number too long for an `Int` is that day too.
package enum RetryAfter {
    /// The longest wait a `Retry-After` is taken to ask for: a day.
    package static let maximumSeconds = 86_400

    /// The seconds `value` asks to wait, or `nil` when it is absent or not a `Retry-After` this reads. `now`, in
    /// epoch seconds, is what an HTTP-date is measured from.
    package static func seconds(_ value: String?, now: Int64 = wallSeconds()) -> Int? {
        guard let value else { return nil }
        let bytes = trimmed(Array(value.utf8))
        guard !bytes.isEmpty else { return nil }
        if bytes.allSatisfy(isDigit) {
            // Leading zeros are digits like any other; past the cap the value is the cap.
            var seconds = 0
            for byte in bytes {
                seconds = seconds * 10 + Int(byte - UInt8(ascii: "0"))
                if seconds > maximumSeconds { return maximumSeconds }
            }
            return seconds
        }
        guard let date = HTTPDateParser.epochSeconds(bytes) else { return nil }
        let remaining = date - now
        return remaining <= 0 ? 0 : Int(min(remaining, Int64(maximumSeconds)))
    }

    /// The wall clock, in whole epoch seconds.
    package static func wallSeconds() -> Int64 {
        Int64(time(nil))
    }

    private static func trimmed(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else {
            return []
        }
        return bytes[first...last]
    }

    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
