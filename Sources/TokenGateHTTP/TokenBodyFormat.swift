import JOSE
public import TokenGateCore

/// A token response body rendered once, when the token enters the cache, so a cache hit only copies bytes.
///
/// The body is TokenGate's own shape (`token`, `tokenType`, `providerId`, `context`, `issuedAt`, `expiresAt`,
/// `expiresIn`, `refreshAfter`), preceded by a provider's legacy `response:` mapping when it has one: the mapped
/// token and expiry keys come first, the standard fields follow where their names are free. Compact JSON in that
/// member order, exactly what `JSON.serialize` makes of the same object.
///
/// Everything is fixed per token except the seconds left before expiry (`expiresIn`, and a `seconds-from-now`
/// mapping): those are written per request. The token itself is not copied into the rendering (it would double a
/// cache entry's memory); it is written from its string, which needs no escaping (a compact JWS is base64url).
///
/// ```swift
/// var buffer = allocator.buffer(capacity: body.byteCount(now: now))
/// body.write(now: now) { buffer.writeBytes($0) }
/// ```
public struct RenderedTokenBody: TokenResponseBody {
    enum Part: Sendable {
        /// JSON text fixed for this token.
        case fixed([UInt8])
        /// The token, unescaped (it was checked to need no escaping).
        case token
        /// `max(0, expiresAt - now)` in decimal.
        case secondsLeft
    }

    // What a member's value is; only `secondsLeft` depends on the time of the request.
    private enum Value {
        case json(JSONValue)
        case token
        case secondsLeft
    }

    private let parts: [Part]
    private let token: String
    private let expiresAt: Int64
    private let fixedByteCount: Int
    private let secondsLeftCount: Int

    /// Renders the body of `token`, served for `context` by `provider`.
    public init(token: DeliveredToken, context: TokenContext, provider: ProviderSettings) {
        var members: [(key: String, value: Value)] = []
        func add(_ key: String, _ value: Value) {
            // First one wins: the mapping's keys go in first, the standard fields only where names are free.
            if !members.contains(where: { $0.key == key }) { members.append((key, value)) }
        }
        if let mapping = provider.response {
            members.append((mapping.tokenKey, .token))
            let expiry: Value =
                switch mapping.expiryFormat {
                case .secondsFromNow: .secondsLeft
                case .epochSeconds, .epochMilliseconds:
                    .json(.integer(mapping.expiryFormat.value(expiresAt: token.expiresAt, now: 0)))
                }
            // The parser refuses equal keys; one built by hand replaces in place, as a JSON object would.
            if mapping.expiryKey == mapping.tokenKey { members[0].value = expiry } else { members.append((mapping.expiryKey, expiry)) }
        }
        add("token", .token)
        add("tokenType", .json(.string(context.tokenType.rawValue)))
        add("providerId", .json(.string(provider.id.rawValue)))
        add("context", .json(.object(context.jsonObject)))
        add("issuedAt", .json(.integer(token.issuedAt)))
        add("expiresAt", .json(.integer(token.expiresAt)))
        add("expiresIn", .secondsLeft)
        add("refreshAfter", .json(.integer(TokenGrant.refreshAfter(token, provider: provider))))

        // A token that would need escaping (never a compact JWS) is rendered escaped, as fixed text.
        let tokenIsPlain = token.compact.utf8.allSatisfy { $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
        var parts: [Part] = []
        var pending: [UInt8] = [UInt8(ascii: "{")]
        for (offset, member) in members.enumerated() {
            if offset > 0 { pending.append(UInt8(ascii: ",")) }
            pending += JSON.serialize(.string(member.key))
            pending.append(UInt8(ascii: ":"))
            switch member.value {
            case .json(let value):
                pending += JSON.serialize(value)
            case .token where tokenIsPlain:
                pending.append(UInt8(ascii: "\""))
                parts.append(.fixed(pending))
                parts.append(.token)
                pending = [UInt8(ascii: "\"")]
            case .token:
                pending += JSON.serialize(.string(token.compact))
            case .secondsLeft:
                parts.append(.fixed(pending))
                parts.append(.secondsLeft)
                pending = []
            }
        }
        pending.append(UInt8(ascii: "}"))
        parts.append(.fixed(pending))

        self.parts = parts
        self.token = token.compact
        self.expiresAt = token.expiresAt
        var fixedByteCount = 0
        var secondsLeftCount = 0
        for part in parts {
            switch part {
            case .fixed(let bytes): fixedByteCount += bytes.count
            case .token: fixedByteCount += token.compact.utf8.count
            case .secondsLeft: secondsLeftCount += 1
            }
        }
        self.fixedByteCount = fixedByteCount
        self.secondsLeftCount = secondsLeftCount
    }

    /// The body's length in bytes at `now` (epoch seconds).
    public func byteCount(now: Int64) -> Int {
        fixedByteCount + secondsLeftCount * Self.decimalDigits(secondsLeft(now: now))
    }

    /// Hands the body at `now` (epoch seconds) to `sink` in a few contiguous pieces, in order.
    public func write(now: Int64, to sink: (UnsafeRawBufferPointer) -> Void) {
        let seconds = secondsLeft(now: now)
        for part in parts {
            switch part {
            case .fixed(let bytes):
                bytes.withUnsafeBytes(sink)
            case .token:
                var token = token
                token.withUTF8 { sink(UnsafeRawBufferPointer($0)) }
            case .secondsLeft:
                Self.withDecimal(seconds, sink)
            }
        }
    }

    /// The body at `now` as one array (tests and callers without a buffer of their own).
    public func bytes(now: Int64) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(byteCount(now: now))
        write(now: now) { output += $0 }
        return output
    }

    private func secondsLeft(now: Int64) -> Int64 {
        // Saturating: a hostile `exp` must not trap, and a token past expiry says 0, as before.
        let (difference, overflow) = expiresAt.subtractingReportingOverflow(now)
        if overflow { return expiresAt > now ? .max : 0 }
        return max(0, difference)
    }

    private static func decimalDigits(_ value: Int64) -> Int {
        var count = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            count += 1
        }
        return count
    }

    // Non-negative values only (seconds left never are negative); no String allocated.
    private static func withDecimal(_ value: Int64, _ sink: (UnsafeRawBufferPointer) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            var rest = value
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            sink(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: digits[start...])))
        }
    }
}
