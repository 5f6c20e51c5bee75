import JOSE
package import TokenGateCore

/// A provider's token response body, laid out once per provider: a request writes it straight from the cached
/// token, so a cache entry holds the token and nothing rendered from it.
///
/// The body is TokenGate's own shape (`token`, `tokenType`, `providerId`, `context`, `issuedAt`, `expiresAt`,
/// `expiresIn`, `refreshAfter`), preceded by a provider's legacy `response:` mapping when it has one: the mapped
/// token and expiry keys come first, the standard fields follow where their names are free. Compact JSON in that
/// member order, exactly what `JSON.serialize` makes of the same object.
///
/// The member names and the provider's ID are fixed text, made once. Per request it copies the token (which needs
/// no escaping: a compact JWS is base64url), the token type, the context object (an ID is copied as it is unless it
/// holds a `"`, `\` or control character, which are escaped) and a few decimal integers.
///
/// ```swift
/// let format = TokenBodyFormat(provider: settings)
/// var buffer = allocator.buffer(capacity: format.byteCount(of: token, context: context, now: now))
/// format.write(token, context: context, now: now) { buffer.writeBytes($0) }
/// ```
package struct TokenBodyFormat: TokenBodyWriter {
    enum Part: Sendable {
        /// JSON text fixed for the provider.
        case fixed([UInt8])
        /// The token as a JSON string, quotes included.
        case token
        /// The token type as a JSON string.
        case tokenType
        /// The context as a JSON object.
        case context
        /// A decimal integer taken from the token at the time of the request.
        case integer(Field)
    }

    enum Field: Sendable {
        case issuedAt, expiresAt, expiresAtMilliseconds, secondsLeft, refreshAfter
    }

    // What a member's value is, before the members are laid out as parts.
    private enum Value {
        case json(JSONValue)
        case part(Part)
    }

    private let parts: [Part]
    private let fixedByteCount: Int
    /// `cache.refreshBefore` in seconds: `refreshAfter` is that long before expiry.
    private let refreshBefore: Int64

    /// The layout of `provider`'s token bodies.
    package init(provider: ProviderSettings) {
        var members: [(key: String, value: Value)] = []
        func add(_ key: String, _ value: Value) {
            // First one wins: the mapping's keys go in first, the standard fields only where names are free.
            if !members.contains(where: { $0.key == key }) { members.append((key, value)) }
        }
        if let mapping = provider.response {
            members.append((mapping.tokenKey, .part(.token)))
            let expiry: Field =
                switch mapping.expiryFormat {
                case .secondsFromNow: .secondsLeft
                case .epochSeconds: .expiresAt
                case .epochMilliseconds: .expiresAtMilliseconds
                }
            // The parser refuses equal keys; one built by hand replaces in place, as a JSON object would.
            if mapping.expiryKey == mapping.tokenKey {
                members[0].value = .part(.integer(expiry))
            } else {
                members.append((mapping.expiryKey, .part(.integer(expiry))))
            }
        }
        add("token", .part(.token))
        add("tokenType", .part(.tokenType))
        add("providerId", .json(.string(provider.id.rawValue)))
        add("context", .part(.context))
        add("issuedAt", .part(.integer(.issuedAt)))
        add("expiresAt", .part(.integer(.expiresAt)))
        add("expiresIn", .part(.integer(.secondsLeft)))
        add("refreshAfter", .part(.integer(.refreshAfter)))

        var parts: [Part] = []
        var pending: [UInt8] = [UInt8(ascii: "{")]
        for (offset, member) in members.enumerated() {
            if offset > 0 { pending.append(UInt8(ascii: ",")) }
            pending += JSON.serialize(.string(member.key))
            pending.append(UInt8(ascii: ":"))
            switch member.value {
            case .json(let value):
                pending += JSON.serialize(value)
            case .part(let part):
                parts.append(.fixed(pending))
                parts.append(part)
                pending = []
            }
        }
        pending.append(UInt8(ascii: "}"))
        parts.append(.fixed(pending))

        self.parts = parts.filter {
            if case .fixed(let bytes) = $0 { !bytes.isEmpty } else { true }
        }
        self.fixedByteCount = parts.reduce(0) {
            if case .fixed(let bytes) = $1 { $0 + bytes.count } else { $0 }
        }
        self.refreshBefore = provider.cache.refreshBefore.components.seconds
    }

    package func byteCount(of token: DeliveredToken, context: TokenContext, now: Int64) -> Int {
        var count = fixedByteCount
        for part in parts {
            switch part {
            case .fixed: break
            case .token: count += token.isJSONSafe ? token.byteCount + 2 : JSON.serialize(.string(token.compact)).count
            case .tokenType: count += context.tokenType.rawValue.utf8.count + 2
            case .context: count += Self.contextByteCount(context)
            case .integer(let field): count += Self.decimalDigits(value(field, of: token, now: now))
            }
        }
        return count
    }

    package func write(_ token: DeliveredToken, context: TokenContext, now: Int64, to sink: (UnsafeRawBufferPointer) -> Void) {
        for part in parts {
            switch part {
            case .fixed(let bytes):
                bytes.withUnsafeBytes(sink)
            case .token where token.isJSONSafe:
                Self.writeASCII("\"", to: sink)
                token.write(to: sink)
                Self.writeASCII("\"", to: sink)
            case .token:
                // Never a compact JWS; rendered escaped rather than refused.
                JSON.serialize(.string(token.compact)).withUnsafeBytes(sink)
            case .tokenType:
                Self.writeString(context.tokenType.rawValue, to: sink)
            case .context:
                Self.writeContext(context, to: sink)
            case .integer(let field):
                Self.writeDecimal(value(field, of: token, now: now), to: sink)
            }
        }
    }

    /// The body for `token` at `now` as one array (tests and callers without a buffer of their own).
    package func bytes(of token: DeliveredToken, context: TokenContext, now: Int64) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(byteCount(of: token, context: context, now: now))
        write(token, context: context, now: now) { output += $0 }
        return output
    }

    private func value(_ field: Field, of token: DeliveredToken, now: Int64) -> Int64 {
        // Saturating throughout: a hostile `exp` must not trap, and a token past expiry says 0 seconds left.
        switch field {
        case .issuedAt:
            return token.issuedAt
        case .expiresAt:
            return token.expiresAt
        case .expiresAtMilliseconds:
            let (milliseconds, overflow) = token.expiresAt.multipliedReportingOverflow(by: 1000)
            return overflow ? (token.expiresAt > 0 ? .max : .min) : milliseconds
        case .secondsLeft:
            let (difference, overflow) = token.expiresAt.subtractingReportingOverflow(now)
            if overflow { return token.expiresAt > now ? .max : 0 }
            return max(0, difference)
        case .refreshAfter:
            let (start, overflow) = token.expiresAt.subtractingReportingOverflow(refreshBefore)
            return max(token.issuedAt, overflow ? .min : start)
        }
    }

    // MARK: - The context object, written as `JSON.serialize(.object(context.jsonObject))` would, without building it

    private static func contextByteCount(_ context: TokenContext) -> Int {
        switch context {
        case .tasks(let list):
            // {"taskIds":[…]}: 14 bytes around the list, each ID quoted, commas between.
            return 14 + list.ids.reduce(0) { $0 + idByteCount($1) } + list.ids.count - 1
        case .trustedDeliveryVehicle(let vehicle, .one(let task)):
            // {"deliveryVehicleId":…,"taskId":…}
            return 32 + idByteCount(vehicle) + idByteCount(task)
        case .trustedDeliveryVehicle(let vehicle, .all):
            return 35 + idByteCount(vehicle)
        default:
            // {"name":id}, or {} for the whole-fleet types.
            guard let name = context.parameterName, let id = context.id else { return 2 }
            return 5 + name.utf8.count + idByteCount(id)
        }
    }

    private static func writeContext(_ context: TokenContext, to sink: (UnsafeRawBufferPointer) -> Void) {
        // Names are the API's fixed spellings; IDs are written as JSON strings (``writeID(_:to:)``).
        switch context {
        case .tasks(let list):
            writeASCII(#"{"taskIds":["#, to: sink)
            for (offset, id) in list.ids.enumerated() {
                if offset > 0 { writeASCII(",", to: sink) }
                writeID(id, to: sink)
            }
            writeASCII("]}", to: sink)
        case .trustedDeliveryVehicle(let vehicle, let task):
            writeASCII(#"{"deliveryVehicleId":"#, to: sink)
            writeID(vehicle, to: sink)
            writeASCII(#","taskId":"#, to: sink)
            switch task {
            case .one(let task): writeID(task, to: sink)
            case .all: writeASCII(#""*""#, to: sink)
            }
            writeASCII("}", to: sink)
        default:
            guard let name = context.parameterName, let id = context.id else { return writeASCII("{}", to: sink) }
            writeASCII("{", to: sink)
            writeString(name, to: sink)
            writeASCII(":", to: sink)
            writeID(id, to: sink)
            writeASCII("}", to: sink)
        }
    }

    /// An ID as a JSON string: copied between quotes when it needs no escaping (nearly always), else as
    /// `JSON.serialize` escapes it (`"`, `\`, control characters).
    private static func writeID(_ id: ContextID, to sink: (UnsafeRawBufferPointer) -> Void) {
        guard id.isJSONSafe else { return JSON.serialize(.string(id.rawValue)).withUnsafeBytes(sink) }
        writeString(id.rawValue, to: sink)
    }

    private static func idByteCount(_ id: ContextID) -> Int {
        id.isJSONSafe ? id.rawValue.utf8.count + 2 : JSON.serialize(.string(id.rawValue)).count
    }

    // MARK: - Bytes

    /// `"text"`, for text that needs no escaping.
    private static func writeString(_ text: String, to sink: (UnsafeRawBufferPointer) -> Void) {
        writeASCII("\"", to: sink)
        var text = text
        text.withUTF8 { sink(UnsafeRawBufferPointer($0)) }
        writeASCII("\"", to: sink)
    }

    private static func writeASCII(_ text: StaticString, to sink: (UnsafeRawBufferPointer) -> Void) {
        sink(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private static func decimalDigits(_ value: Int64) -> Int {
        var count = value < 0 ? 2 : 1
        var rest = value.magnitude
        while rest >= 10 {
            rest /= 10
            count += 1
        }
        return count
    }

    // No String allocated.
    private static func writeDecimal(_ value: Int64, to sink: (UnsafeRawBufferPointer) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            var rest = value.magnitude
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            if value < 0 {
                start -= 1
                digits[start] = UInt8(ascii: "-")
            }
            sink(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: digits[start...])))
        }
    }
}
