#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The `Date` header's value (RFC 9110 §5.6.7, `Sun, 06 Nov 1994 08:49:37 GMT`), formatted once per second.
///
/// One per connection handler, used on its event loop only: a connection formats the date at most once a second,
/// and no lock or atomic is shared between connections.
struct HTTPDate {
    private var second: time_t = -1
    private var value = ""

    /// The value for now.
    mutating func now() -> String {
        let now = time(nil)
        if now != second {
            second = now
            value = Self.format(now)
        }
        return value
    }

    /// `seconds` since the epoch as an IMF-fixdate.
    static func format(_ seconds: time_t) -> String {
        var seconds = seconds
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let day = dayNames[Int(parts.tm_wday)]
        let month = monthNames[Int(parts.tm_mon)]
        return "\(day), \(twoDigits(parts.tm_mday)) \(month) \(parts.tm_year + 1900) "
            + "\(twoDigits(parts.tm_hour)):\(twoDigits(parts.tm_min)):\(twoDigits(parts.tm_sec)) GMT"
    }

    private static func twoDigits(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }

    private static let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
}
