import Foundation

/// An authorizer URL with `{placeholder}`s, checked at load and expanded per request with percent-encoded values.
///
/// The rules are the upstream backend's: placeholders stand only in the path and query, never in the scheme, host or
/// port, so no caller can send the question to another server; a value is percent-encoded down to
/// `A-Z a-z 0-9 - . _ ~`, so it cannot add a path segment, a query parameter or a fragment; a path value made only of
/// dots (`..`) is never sent.
public struct AuthorizerURLTemplate: Sendable, Equatable, CustomStringConvertible {
    /// What a placeholder stands for.
    public enum Placeholder: String, Sendable, CaseIterable {
        /// The session token's `sub`; for an api-key client, the client's name.
        case subject
        /// The client entry's `name`.
        case client
        /// The provider ID.
        case providerId
        /// The token type asked for (`consumer`, `driver`, …).
        case tokenType
        /// The context's one ID, whatever its kind (a trusted driver's vehicle); empty for a batch or a whole fleet.
        case contextId
        /// The request parameter of that name (`taskIds`: a batch's tasks, comma-separated); empty when the request
        /// names a context of another kind.
        case tripId, vehicleId, deliveryVehicleId, trackingId, taskId, taskIds
    }

    enum Part: Sendable, Equatable {
        case literal(String)
        /// `inPath` is true before the `?`.
        case placeholder(Placeholder, inPath: Bool)
    }

    let parts: [Part]

    /// The template as configured.
    public var description: String {
        parts.map { part in
            switch part {
            case .literal(let text): text
            case .placeholder(let name, _): "{\(name.rawValue)}"
            }
        }.joined()
    }

    /// The placeholders the template uses.
    public var placeholders: Set<Placeholder> {
        Set(parts.compactMap { if case .placeholder(let name, _) = $0 { name } else { nil } })
    }

    /// Splits `template` into literals and placeholders; the error message says what is wrong (the caller locates
    /// it). Scheme, host and credentials are checked by the caller, on a sample expansion (``sample``).
    public init(parsing template: String) throws(AuthorizerURLTemplateError) {
        var parts: [Part] = []
        var literal = ""
        var inPath = true
        var rest = Substring(template)
        while let open = rest.firstIndex(where: { $0 == "{" || $0 == "}" }) {
            guard rest[open] == "{" else { throw AuthorizerURLTemplateError("unmatched '}'") }
            literal += rest[..<open]
            if literal.contains("?") { inPath = false }
            guard let close = rest[open...].firstIndex(of: "}") else { throw AuthorizerURLTemplateError("unterminated '{'") }
            let name = String(rest[rest.index(after: open)..<close])
            guard let placeholder = Placeholder(rawValue: name) else {
                let names = Placeholder.allCases.map { "{\($0.rawValue)}" }.joined(separator: ", ")
                throw AuthorizerURLTemplateError("unknown placeholder '{\(name)}'; expected one of: \(names)")
            }
            if !literal.isEmpty { parts.append(.literal(literal)) }
            literal = ""
            parts.append(.placeholder(placeholder, inPath: inPath))
            rest = rest[rest.index(after: close)...]
        }
        literal += rest
        if !literal.isEmpty { parts.append(.literal(literal)) }
        self.parts = parts
        try checkShape(template)
    }

    /// The scheme and host must be literal, and nothing of the URL may be a fragment (it would never be sent).
    private func checkShape(_ template: String) throws(AuthorizerURLTemplateError) {
        guard case .literal(let head)? = parts.first, let scheme = head.range(of: "://") else {
            throw AuthorizerURLTemplateError("the URL must start with its scheme and host")
        }
        let afterScheme = head[scheme.upperBound...]
        guard afterScheme.contains(where: { $0 == "/" || $0 == "?" }) || parts.count == 1 else {
            throw AuthorizerURLTemplateError("placeholders may appear only in the path and query, not in the host or port")
        }
        guard !template.contains("#") else { throw AuthorizerURLTemplateError("a URL fragment is never sent; remove it") }
    }

    /// The URL with every placeholder replaced by `x`: what the URL checks look at.
    public var sample: String { expand { _, _ in "x" } }

    /// The URL that asks about `context` for `subject`, or `nil` when a value cannot travel safely (a path segment
    /// made only of dots).
    func url(subject: String, client: String, provider: ProviderID, context: TokenContext) -> String? {
        var unsafe = false
        let url = expand { name, inPath in
            let value = Self.value(of: name, subject: subject, client: client, provider: provider, context: context)
            if inPath, !value.isEmpty, value.allSatisfy({ $0 == "." }) { unsafe = true }
            return Self.percentEncode(value)
        }
        return unsafe ? nil : url
    }

    private func expand(_ value: (Placeholder, Bool) -> String) -> String {
        parts.map { part in
            switch part {
            case .literal(let text): text
            case .placeholder(let name, let inPath): value(name, inPath)
            }
        }.joined()
    }

    static func value(
        of name: Placeholder, subject: String, client: String, provider: ProviderID, context: TokenContext
    ) -> String {
        switch name {
        case .subject: subject
        case .client: client
        case .providerId: provider.rawValue
        case .tokenType: context.tokenType.rawValue
        case .contextId: context.id?.rawValue ?? ""
        case .tripId, .vehicleId, .deliveryVehicleId, .trackingId, .taskId, .taskIds:
            context.parameters.first { $0.name == name.rawValue }?.value ?? ""
        }
    }

    /// RFC 3986 unreserved characters stay; every other byte of the UTF-8 becomes `%XX`.
    static func percentEncode(_ value: String) -> String {
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

/// Why an authorizer URL template was refused.
public struct AuthorizerURLTemplateError: Error, Sendable, Equatable {
    /// What is wrong, without location (the parser adds it).
    public let message: String
    init(_ message: String) { self.message = message }
}
