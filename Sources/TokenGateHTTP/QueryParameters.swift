import TokenGateCore

/// The token route's query string, parsed with the request limits applied as it goes.
///
/// Read as browsers write it (`URLSearchParams`, HTML forms: `application/x-www-form-urlencoded`): parameters are
/// split on `&`, the name is everything before the first `=`, and name and value are percent-decoded as UTF-8 with
/// `+` a space (``PercentDecoding``). So `tripId=p1+space` and `tripId=p1%20space` both name the trip `p1 space`,
/// and a `+` in an ID travels as `%2B`. A trailing `&` adds no parameter; an empty one in between
/// is a parameter with an empty name. Both doors (the router and the event loop's answer to a cached hit) read the
/// query here. A query with nothing to decode (the usual ASCII ID) is taken as it is, with no copy made to decode.
enum QueryParameters {
    /// The parameters of `query` (the text after `?`, without the fragment) by name.
    ///
    /// Throws `invalid_request`, checking parameters in order: more than `maxQueryParameters`, a value over
    /// `maxQueryValueBytes` once decoded (a context ID's is refused as too long, naming its parameter; a `taskIds`
    /// list is bounded by the URL's own limit), a repeated name; then a name that is no context parameter; then a
    /// value that is not UTF-8 (naming its parameter). Messages never quote the request's own text.
    static func parse(_ query: String?, limits: RequestLimits) throws(TokenGateError) -> [String: String] {
        guard let query, !query.isEmpty else { return [:] }
        var parameters: [String: String] = [:]
        var hasUnknown = false
        var notUTF8: ContextID.Field?
        var count = 0
        var rest = query[...]
        while !rest.isEmpty {
            let end = rest.utf8.firstIndex(of: UInt8(ascii: "&")) ?? rest.endIndex
            let part = rest[..<end]
            rest = end == rest.endIndex ? rest[end...] : rest[rest.utf8.index(after: end)...]
            count += 1
            guard count <= limits.maxQueryParameters else { throw TokenGateError(.invalidRequest, "too many query parameters") }
            let (name, value, isUTF8) = split(part)
            let field = ContextID.Field(rawValue: name)
            if value.utf8.count > limits.maxQueryValueBytes, field != .taskIds {
                // Past four bytes a character, a context ID is too long whatever it holds: said as its own rule.
                if let field { throw TokenGateError(refusing: ContextID.Refusal(field, .tooLong)) }
                throw TokenGateError(.invalidRequest, "a query parameter is longer than \(limits.maxQueryValueBytes) bytes")
            }
            guard parameters.updateValue(value, forKey: name) == nil else {
                throw TokenGateError(.invalidRequest, "a query parameter is repeated")
            }
            if field == nil || field == .contextId {
                hasUnknown = true
            } else if !isUTF8, notUTF8 == nil {
                notUTF8 = field
            }
        }
        // Reported after the loop: a limit or a repeat comes first. The name is never echoed: it is attacker text.
        if hasUnknown {
            throw TokenGateError(
                .invalidRequest,
                "unknown query parameter; expected one of: \(TokenContext.allParameterNames.sorted().joined(separator: ", "))"
            )
        }
        if let notUTF8 { throw TokenGateError(refusing: ContextID.Refusal(notUTF8, .invalidUTF8)) }
        return parameters
    }

    /// A parameter's name and value, decoded; `isUTF8` is false when either was not UTF-8 (its text is then the
    /// bytes with U+FFFD for what did not decode, only ever refused).
    private static func split(_ part: Substring) -> (name: String, value: String, isUTF8: Bool) {
        guard let equals = part.utf8.firstIndex(of: UInt8(ascii: "=")) else {
            let (name, isUTF8) = decoded(part)
            return (name, "", isUTF8)
        }
        let (name, nameIsUTF8) = decoded(part[..<equals])
        let (value, valueIsUTF8) = decoded(part[part.utf8.index(after: equals)...])
        return (name, value, nameIsUTF8 && valueIsUTF8)
    }

    private static func decoded(_ raw: Substring) -> (text: String, isUTF8: Bool) {
        guard PercentDecoding.needsDecoding(raw, plusIsSpace: true) else { return (String(raw), true) }
        guard let text = PercentDecoding.text(of: raw, plusIsSpace: true) else { return (String(raw), false) }
        return (text, true)
    }
}
