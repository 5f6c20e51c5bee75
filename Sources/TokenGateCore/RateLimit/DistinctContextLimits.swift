/// How many *different* contexts one caller may obtain tokens for per window: `rateLimits.distinctContexts`.
///
/// Rate limits count requests, so a leaked credential asking once each for 10,000 trips passes every one; this
/// counts contexts instead. Asking again for a context already counted in the window is free.
///
/// ```yaml
/// distinctContexts: { perCaller: 200/1h, perType: { consumer: 50/1h }, shadow: false }
/// ```
package struct DistinctContextLimits: Sendable, Hashable, CustomStringConvertible {
    /// One cap: at most `count` contexts per fixed window of `window` (aligned to the epoch, the same at every
    /// replica).
    package struct Cap: Sendable, Hashable, CustomStringConvertible {
        /// Different contexts allowed per window. At least 1.
        package var count: Int
        /// The window, whole seconds.
        package var windowSeconds: Int64

        /// A cap of `count` contexts per `windowSeconds`.
        package init(count: Int, windowSeconds: Int64) {
            precondition(count >= 1 && windowSeconds >= 1, "invalid DistinctContextLimits.Cap")
            self.count = count
            self.windowSeconds = windowSeconds
        }

        /// The window that holds `now` (epoch seconds): its number and how many seconds are left in it.
        func window(at now: Int64) -> (index: Int64, secondsLeft: Int64) {
            let index = now >= 0 ? now / windowSeconds : (now - windowSeconds + 1) / windowSeconds
            return (index, (index + 1) * windowSeconds - now)
        }

        /// `200/h`, as configured.
        package var description: String {
            switch windowSeconds {
            case 1: "\(count)/s"
            case 60: "\(count)/min"
            case 3_600: "\(count)/h"
            default: "\(count)/\(windowSeconds)s"
            }
        }
    }

    /// The cap on every context of every type together, or nil.
    package var perCaller: Cap?
    /// Caps on one token type's contexts, counted apart from the others.
    package var perType: [TokenType: Cap]
    /// Counted and logged, never refused: for trying a cap out.
    package var shadow: Bool

    /// Limits with the given caps.
    package init(perCaller: Cap?, perType: [TokenType: Cap] = [:], shadow: Bool = false) {
        self.perCaller = perCaller
        self.perType = perType
        self.shadow = shadow
    }

    /// The caps that count a context of `type`, each with the name of its counter (`all` or the type).
    func caps(for type: TokenType) -> [(scope: String, cap: Cap)] {
        var caps: [(scope: String, cap: Cap)] = []
        if let perCaller { caps.append(("all", perCaller)) }
        if let cap = perType[type] { caps.append((type.rawValue, cap)) }
        return caps
    }

    package var description: String {
        var parts = perCaller.map { ["perCaller \($0)"] } ?? []
        parts += perType.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)" }
        return parts.joined(separator: ", ") + (shadow ? " shadow" : "")
    }
}
