public import Foundation

/// One GET to the gateway, as the provider builds it.
public struct HTTPTransportRequest: Sendable, Hashable {
    /// The full URL, query included.
    public var url: URL
    /// Header fields, e.g. `Authorization: Bearer …`. Never log them: they carry the app's credential.
    public var headers: [String: String]

    /// A GET request to `url` with `headers`.
    public init(url: URL, headers: [String: String]) {
        self.url = url
        self.headers = headers
    }
}

/// The gateway's answer, whatever its status.
public struct HTTPTransportResponse: Sendable, Hashable {
    /// The HTTP status code.
    public var status: Int
    /// Header fields; look them up with ``value(forHeader:)``, which ignores case.
    public var headers: [String: String]
    /// The body bytes.
    public var body: Data

    /// A response with `status`, `headers` and `body`.
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of header `name`, compared case-insensitively as HTTP requires.
    public func value(forHeader name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.key.lowercased() == wanted }?.value
    }
}

/// Sends a GET and returns the response; throws only when no HTTP response arrived (a network failure).
///
/// The default is ``URLSessionTransport``; tests inject an in-memory one:
///
/// ```swift
/// struct CannedTransport: HTTPTransport {
///     func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
///         HTTPTransportResponse(status: 200, body: Data(#"{"token":"…","expiresIn":3600}"#.utf8))
///     }
/// }
/// ```
public protocol HTTPTransport: Sendable {
    /// Performs `request`. Non-2xx statuses are returned, not thrown.
    func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse
}
