/// A URL with `{placeholder}`s, checked at load and expanded per request with percent-encoded values: an upstream
/// token server's URL, an authorizer's.
///
/// Placeholders may stand only in the path and query, never in the scheme, host or port, so no request value can
/// send the call to another server. A value is percent-encoded down to `A-Z a-z 0-9 - . _ ~`, so it cannot add a
/// path segment, a query parameter or a fragment; a path value made only of dots (`..`) is never sent.
///
/// ```swift
/// let template = try URLTemplate(parsing: "https://auth.example/trips/{tripId}", placeholders: ["tripId"])
/// template.expand { _ in "trip 42" }   // "https://auth.example/trips/trip%2042"
/// ```
package struct URLTemplate: Sendable, Equatable, CustomStringConvertible {
    enum Part: Sendable, Equatable {
        case literal(String)
        /// A placeholder; `inPath` is true before the `?`.
        case placeholder(String, inPath: Bool)
    }

    let parts: [Part]

    /// Splits `template` into literals and the `allowed` placeholders; the error says what is wrong (the caller
    /// locates it). Scheme, host and credentials are the caller's to check, on ``sample``.
    package init(parsing template: String, placeholders allowed: [String]) throws(URLTemplateError) {
        var parts: [Part] = []
        var literal = ""
        var inPath = true
        var rest = Substring(template)
        while let open = rest.firstIndex(where: { $0 == "{" || $0 == "}" }) {
            guard rest[open] == "{" else { throw URLTemplateError("unmatched '}'") }
            literal += rest[..<open]
            if literal.contains("?") { inPath = false }
            guard let close = rest[open...].firstIndex(of: "}") else { throw URLTemplateError("unterminated '{'") }
            let name = String(rest[rest.index(after: open)..<close])
            guard allowed.contains(name) else {
                throw URLTemplateError("unknown placeholder '{\(name)}'; expected one of: \(allowed.map { "{\($0)}" }.joined(separator: ", "))")
            }
            if !literal.isEmpty { parts.append(.literal(literal)) }
            literal = ""
            parts.append(.placeholder(name, inPath: inPath))
            rest = rest[rest.index(after: close)...]
        }
        literal += rest
        if !literal.isEmpty { parts.append(.literal(literal)) }
        self.parts = parts
        try checkShape(template)
    }

    /// The scheme and host must be literal, and nothing of the URL may be a fragment (it would never be sent).
    private func checkShape(_ template: String) throws(URLTemplateError) {
        guard case .literal(let head)? = parts.first, let scheme = head.firstRange(of: "://") else {
            throw URLTemplateError("the URL must start with its scheme and host")
        }
        guard head[scheme.upperBound...].contains(where: { $0 == "/" || $0 == "?" }) || parts.count == 1 else {
            throw URLTemplateError("placeholders may appear only in the path and query, not in the host or port")
        }
        guard !template.contains("#") else { throw URLTemplateError("a URL fragment is never sent; remove it") }
    }

    /// The template as configured.
    package var description: String {
        parts.map { part in
            switch part {
            case .literal(let text): text
            case .placeholder(let name, _): "{\(name)}"
            }
        }.joined()
    }

    /// The placeholders the template uses.
    package var placeholders: Set<String> {
        Set(parts.compactMap { if case .placeholder(let name, _) = $0 { name } else { nil } })
    }

    /// The URL with every placeholder replaced by `x`: what the URL checks look at.
    package var sample: String { expand(percentEncoded: { _ in "x" }) }

    /// The URL with each placeholder's `value`, percent-encoded, or `nil` when a value cannot travel safely (a path
    /// segment made only of dots).
    package func expand(_ value: (String) -> String) -> String? {
        var unsafe = false
        let url = expand(percentEncoded: { name, inPath in
            let text = value(name)
            if inPath, !text.isEmpty, text.allSatisfy({ $0 == "." }) { unsafe = true }
            return Self.percentEncode(text)
        })
        return unsafe ? nil : url
    }

    private func expand(percentEncoded value: (String, Bool) -> String) -> String {
        parts.map { part in
            switch part {
            case .literal(let text): text
            case .placeholder(let name, let inPath): value(name, inPath)
            }
        }.joined()
    }

    private func expand(percentEncoded value: (String) -> String) -> String { expand(percentEncoded: { name, _ in value(name) }) }

    /// RFC 3986 unreserved characters stay; every other byte of the UTF-8 becomes `%XX`.
    package static func percentEncode(_ value: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Why a URL template was refused.
package struct URLTemplateError: Error, Sendable, Equatable {
    /// What is wrong, without location (the parser adds it).
    package let message: String
    /// An error saying `message`.
    package init(_ message: String) { self.message = message }
}
