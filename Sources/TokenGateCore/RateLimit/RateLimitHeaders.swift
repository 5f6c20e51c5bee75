/// What a token answer says about the limits it was charged to, as the `RateLimit-Policy` and `RateLimit` header
/// fields of draft-ietf-httpapi-ratelimit-headers: a list of named policies, each with its quota `q` per window `w`
/// seconds, and for the one with the fewest requests left, how many remain (`r`) and the seconds until its whole
/// burst is available again (`t`).
///
/// ```
/// RateLimit-Policy: "caller";q=1200;w=60, "context";q=60;w=60
/// RateLimit: "context";r=19;t=2
/// ```
///
/// Only enforced limits appear: a limit in `shadow` mode refuses nobody, so it is not advertised.
package struct RateLimitHeaders: Sendable, Hashable {
    /// The `RateLimit-Policy` value: every enforced provider, caller and context limit of the provider.
    package let policy: String
    /// The `RateLimit` value, or nil where this replica cannot know it (limits shared through Redis).
    package let status: String?

    /// The policy value for `limits` in order, or nil when none is enforced.
    static func policy(_ limits: [(name: String, limit: RateLimit?)]) -> String? {
        let items = limits.compactMap { name, limit -> String? in
            guard let limit, !limit.shadow else { return nil }
            return "\"\(name)\";q=\(limit.count);w=\(TokenGateClock.secondsRoundingUp(limit.period))"
        }
        return items.isEmpty ? nil : items.joined(separator: ", ")
    }

    /// The status value of policy `name` with `remaining` requests left, whole again in `resetNanoseconds`.
    static func status(_ name: String, remaining: Int, resetNanoseconds: UInt64) -> String {
        "\"\(name)\";r=\(remaining);t=\((resetNanoseconds + 999_999_999) / 1_000_000_000)"
    }
}
