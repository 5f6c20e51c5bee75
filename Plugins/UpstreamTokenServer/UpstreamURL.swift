import Foundation
import TokenGateCore

/// An upstream token server's URL: a ``URLTemplate`` over the request's provider, type and context, which must be
/// `http://` or `https://` and hold no credentials.
struct UpstreamURL: Sendable, Equatable {
    /// The names a template may use, in the order an error lists them.
    static let placeholderNames: [String] = Set(["providerId", "tokenType", "contextId"]).union(TokenContext.allParameterNames).sorted()

    let template: URLTemplate

    /// The template as configured (it can hold no credentials: those are refused).
    var text: String { template.description }

    /// Plain `http://` to a host other than this machine: tokens and the headers' secrets would cross the network
    /// in the clear. Allowed (a private network may be trusted), but warned about.
    let isPlainHTTPToAnotherHost: Bool

    /// Parses and checks `text`; the error message says what is wrong (the caller locates it).
    init(parsing text: String) throws(URLTemplateError) {
        let lowered = text.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            throw URLTemplateError("expected an http:// or https:// URL")
        }
        template = try URLTemplate(parsing: text, placeholders: Self.placeholderNames)
        guard let components = URLComponents(string: template.sample), let host = components.host, !host.isEmpty else {
            throw URLTemplateError("not a valid URL")
        }
        guard components.user == nil, components.password == nil else {
            throw URLTemplateError("credentials do not belong in the URL; send them in headers from ${ENV}")
        }
        isPlainHTTPToAnotherHost = lowered.hasPrefix("http://") && !JWKSURL.isLoopback(host)
    }

    /// The URL for `request`, or `nil` when a value cannot travel safely (a path segment made only of dots).
    func url(for request: TokenRequest) -> String? {
        template.expand { Self.value(of: $0, for: request) }
    }

    /// `{tripId}` and the like are empty when the request's context is of another kind.
    static func value(of name: String, for request: TokenRequest) -> String {
        switch name {
        case "providerId": request.provider.rawValue
        case "tokenType": request.type.rawValue
        case "contextId": request.context.id?.rawValue ?? ""
        default: request.context.parameters.first { $0.name == name }?.value ?? ""
        }
    }
}
