import OpenSSLPrimitives
import TokenGateCore

/// The token route's query string, parsed with the request limits applied as it goes.
///
/// Same reading as Hummingbird's `URI.queryParameters`, which it replaces on the hot path (that one builds a
/// hashed `FlatDictionary` of substrings per request): parameters are split on `&`, a trailing `&` adds none, an
/// empty one in between is a parameter with an empty name; the name is everything before the first `=` and is
/// not decoded; the value is percent-decoded, kept as sent when its encoding is malformed, and `+` stays `+`.
enum QueryParameters {
    /// The parameters of `query` (the text after `?`, without the fragment) by name.
    ///
    /// Throws `invalid_request`, checking parameters in order: more than `maxQueryParameters`, a decoded value
    /// longer than `maxQueryValueBytes`, a repeated name; then a name that is no context parameter. Messages never
    /// quote the request's own text.
    static func parse(_ query: String?, limits: RequestLimits) throws(TokenGateError) -> [String: String] {
        guard let query, !query.isEmpty else { return [:] }
        var parameters: [String: String] = [:]
        var hasUnknown = false
        var count = 0
        var rest = query[...]
        while !rest.isEmpty {
            let end = rest.utf8.firstIndex(of: UInt8(ascii: "&")) ?? rest.endIndex
            let part = rest[..<end]
            rest = end == rest.endIndex ? rest[end...] : rest[rest.utf8.index(after: end)...]
            count += 1
            guard count <= limits.maxQueryParameters else { throw TokenGateError(.invalidRequest, "too many query parameters") }
            let (key, value) = split(part)
            guard value.utf8.count <= limits.maxQueryValueBytes else {
                throw TokenGateError(.invalidRequest, "a query parameter is longer than \(limits.maxQueryValueBytes) bytes")
            }
            let name = String(key)
            guard parameters.updateValue(value, forKey: name) == nil else {
                throw TokenGateError(.invalidRequest, "a query parameter is repeated")
            }
            if !TokenContext.allParameterNames.contains(name) { hasUnknown = true }
        }
        // Reported after the loop: a limit or a repeat comes first. The name is never echoed: it is attacker text.
        if hasUnknown {
            throw TokenGateError(
                .invalidRequest,
                "unknown query parameter; expected one of: \(TokenContext.allParameterNames.sorted().joined(separator: ", "))"
            )
        }
        return parameters
    }

    private static func split(_ part: Substring) -> (key: Substring, value: String) {
        guard let equals = part.utf8.firstIndex(of: UInt8(ascii: "=")) else { return (part, "") }
        let raw = part[part.utf8.index(after: equals)...]
        // Decoding only when there is something to decode: IDs are plain ASCII.
        let value = raw.utf8.contains(UInt8(ascii: "%")) ? (percentDecoded(raw) ?? String(raw)) : String(raw)
        return (part[..<equals], value)
    }

    /// `raw` with `%XX` sequences decoded (invalid UTF-8 repaired), or nil when one is malformed.
    static func percentDecoded(_ raw: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(raw.utf8.count)
        var iterator = raw.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(HexBytes.digitValue), let low = iterator.next().flatMap(HexBytes.digitValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
