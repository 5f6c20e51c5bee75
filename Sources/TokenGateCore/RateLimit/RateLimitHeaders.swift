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
    ///
    /// `"name";r=N;t=S`, written byte by byte into one string: every answer under a limit sends one, and string
    /// interpolation cost a refusal more than the rest of its headers.
    static func status(_ name: String, remaining: Int, resetNanoseconds: UInt64) -> String {
        let seconds = resetNanoseconds / 1_000_000_000 + (resetNanoseconds % 1_000_000_000 == 0 ? 0 : 1)
        var name = name
        return name.withUTF8 { name in
            // Two decimals of at most 20 digits and a sign, the name, and 8 bytes of punctuation.
            String(unsafeUninitializedCapacity: name.count + 50) { output in
                var count = 0
                func append(_ bytes: some Sequence<UInt8>) {
                    for byte in bytes {
                        output[count] = byte
                        count += 1
                    }
                }
                func appendDecimal(_ value: UInt64) {
                    var digits: (UInt64, Int) = (1, 1)
                    while value / digits.0 >= 10 { digits = (digits.0 * 10, digits.1 + 1) }
                    var rest = value
                    for _ in 0..<digits.1 {
                        append(CollectionOfOne(UInt8(ascii: "0") + UInt8(rest / digits.0)))
                        rest %= digits.0
                        digits.0 /= 10
                    }
                }
                append(CollectionOfOne(UInt8(ascii: "\"")))
                append(name)
                append("\";r=".utf8)
                if remaining < 0 { append(CollectionOfOne(UInt8(ascii: "-"))) }
                appendDecimal(UInt64(remaining.magnitude))
                append(";t=".utf8)
                appendDecimal(seconds)
                return count
            }
        }
    }
}
