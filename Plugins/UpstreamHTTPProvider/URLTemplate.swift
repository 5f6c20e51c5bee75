import Foundation
import TokenGateCore

/// An upstream URL with `{placeholder}`s, checked at load and expanded per request with percent-encoded values.
///
/// Placeholders may stand only in the path and query, never in the scheme, host or port, so no request value can
/// send the call to another server. A value is percent-encoded down to `A-Z a-z 0-9 - . _ ~`, so it cannot add a
/// path segment, a query parameter or a fragment.
struct URLTemplate: Sendable, Equatable {
    /// The names a template may use.
    static let placeholderNames: Set<String> = Set(["providerId", "tokenType", "contextId"]).union(TokenContext.allParameterNames)

    enum Part: Sendable, Equatable {
        case literal(String)
        /// A placeholder; `inPath` is true before the `?`.
        case placeholder(String, inPath: Bool)
    }

    let parts: [Part]

    /// The template as configured (it can hold no credentials: those are refused).
    var text: String {
        parts.map { part in
            switch part {
            case .literal(let text): text
            case .placeholder(let name, _): "{\(name)}"
            }
        }.joined()
    }

    /// Parses and checks `template`; the error message says what is wrong (the caller locates it).
    init(parsing template: String) throws(URLTemplateError) {
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
            guard Self.placeholderNames.contains(name) else {
                throw URLTemplateError(
                    "unknown placeholder '{\(name)}'; expected one of: \(Self.placeholderNames.sorted().map { "{\($0)}" }.joined(separator: ", "))"
                )
            }
            if !literal.isEmpty { parts.append(.literal(literal)) }
            literal = ""
            parts.append(.placeholder(name, inPath: inPath))
            rest = rest[rest.index(after: close)...]
        }
        literal += rest
        if !literal.isEmpty { parts.append(.literal(literal)) }
        self.parts = parts
        try check(template)
    }

    /// Scheme, host and the start of the path must be literal, and the URL must parse with sample values.
    private mutating func check(_ template: String) throws(URLTemplateError) {
        let lowered = template.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            throw URLTemplateError("expected an http:// or https:// URL")
        }
        guard case .literal(let head)? = parts.first else { throw URLTemplateError("the URL must start with its scheme and host") }
        let afterScheme = head[head.range(of: "://")!.upperBound...]
        guard afterScheme.contains(where: { $0 == "/" || $0 == "?" }) || parts.count == 1 else {
            throw URLTemplateError("placeholders may appear only in the path and query, not in the host or port")
        }
        guard !template.contains("#") else { throw URLTemplateError("a URL fragment is never sent; remove it") }
        let sample = expand { _ in "x" }
        guard let components = URLComponents(string: sample), let host = components.host, !host.isEmpty else {
            throw URLTemplateError("not a valid URL")
        }
        guard components.user == nil, components.password == nil else {
            throw URLTemplateError("credentials do not belong in the URL; send them in headers from ${ENV}")
        }
        isPlainHTTPToAnotherHost = lowered.hasPrefix("http://") && !JWKSURL.isLoopback(host)
    }

    /// Plain `http://` to a host other than this machine: tokens and the headers' secrets would cross the network
    /// in the clear. Allowed (a private network may be trusted), but warned about.
    private(set) var isPlainHTTPToAnotherHost = false

    /// The URL for `request`, or `nil` when a value cannot travel safely (a path segment made only of dots).
    func url(for request: TokenRequest) -> String? {
        var unsafe = false
        let url = expand { name, inPath in
            let value = Self.value(of: name, for: request)
            if inPath, !value.isEmpty, value.allSatisfy({ $0 == "." }) { unsafe = true }
            return Self.percentEncode(value)
        }
        return unsafe ? nil : url
    }

    private func expand(_ value: (String, Bool) -> String) -> String {
        parts.map { part in
            switch part {
            case .literal(let text): text
            case .placeholder(let name, let inPath): value(name, inPath)
            }
        }.joined()
    }

    private func expand(_ value: (String) -> String) -> String { expand { name, _ in value(name) } }

    /// `{tripId}` and the like are empty when the request's context is of another kind.
    static func value(of name: String, for request: TokenRequest) -> String {
        switch name {
        case "providerId": request.provider.rawValue
        case "tokenType": request.type.rawValue
        case "contextId": request.context.id?.rawValue ?? ""
        default: request.context.parameters.first { $0.name == name }?.value ?? ""
        }
    }

    /// RFC 3986 unreserved characters stay; every other byte becomes `%XX`.
    static func percentEncode(_ value: String) -> String {
        var result = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                result += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]], as: UTF8.self)
            }
        }
        return result
    }
}

/// Why a URL template was refused.
struct URLTemplateError: Error, Sendable, Equatable {
    let message: String
    init(_ message: String) { self.message = message }
}
