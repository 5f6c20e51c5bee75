/// A sustained rate plus a burst: `600/min` with burst 50 allows 50 requests at once, then one every 100 ms.
///
/// ```swift
/// let limit = RateLimit(count: 600, per: .seconds(60), burst: 50)
/// let parsed = RateLimit(parsing: "600/min", burst: 50)   // the same; nil for malformed text
/// ```
package struct RateLimit: Sendable, Hashable, CustomStringConvertible {
    /// Requests allowed per ``period`` in the long run. At least 1.
    package let count: Int
    /// The period ``count`` refers to. Positive.
    package let period: Duration
    /// Requests allowed back to back after a quiet period. At least 1.
    package let burst: Int
    /// A limit being tried out (`shadow: true`): what it would refuse is counted and logged, and let through.
    package let shadow: Bool

    /// A limit from validated values; invalid ones are programmer errors (configuration uses
    /// ``init(parsing:burst:)``, which returns `nil` instead).
    package init(count: Int, per period: Duration, burst: Int = 1, shadow: Bool = false) {
        precondition(Self.isValid(count: count, period: period, burst: burst), "invalid RateLimit")
        self.count = count
        self.period = period
        self.burst = burst
        self.shadow = shadow
    }

    /// The same limit, enforced or (`shadow`) only measured.
    package func shadow(_ shadow: Bool) -> RateLimit { RateLimit(count: count, per: period, burst: burst, shadow: shadow) }

    /// Parses `N/s`, `N/sec`, `N/min`, `N/h` or `N/hour` (N a positive decimal integer, no spaces or signs), as
    /// written in `config.yaml`'s `rate:`; `burst` comes from its own key. Returns `nil` for anything else,
    /// including a burst below 1 or a rate above one request per nanosecond.
    package init?(parsing text: String, burst: Int = 1) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 18,
            parts[0].utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let count = Int(parts[0])
        else { return nil }
        let period: Duration
        switch parts[1] {
        case "s", "sec": period = .seconds(1)
        case "min": period = .seconds(60)
        case "h", "hour": period = .seconds(3_600)
        default: return nil
        }
        guard Self.isValid(count: count, period: period, burst: burst) else { return nil }
        self.init(count: count, per: period, burst: burst)
    }

    /// `600/min burst 50`, or `600/60s burst 50` for a period without a short name.
    package var description: String {
        let unit: String
        switch period {
        case .seconds(1): unit = "s"
        case .seconds(60): unit = "min"
        case .seconds(3_600): unit = "h"
        default: unit = "\(period)"
        }
        return "\(count)/\(unit) burst \(burst)\(shadow ? " shadow" : "")"
    }

    /// Time between two requests at the sustained rate, in nanoseconds (rounded down, so never stricter).
    var emissionInterval: UInt64 { TokenGateClock.nanoseconds(period) / UInt64(count) }

    private static func isValid(count: Int, period: Duration, burst: Int) -> Bool {
        count >= 1 && burst >= 1 && period > .zero && TokenGateClock.nanoseconds(period) / UInt64(count) >= 1
    }
}
