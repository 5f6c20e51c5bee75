public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The default ``HTTPTransport``: `URLSession`, no cookies, no caches (token responses are `no-store`), and no
/// redirects: a 3xx is returned as is (an invalid response), so the app's credential is never replayed elsewhere.
public struct URLSessionTransport: HTTPTransport {
    /// The session requests go through.
    public let session: URLSession
    /// Seconds before a request without any response fails as a network error.
    public let timeout: TimeInterval

    /// A transport over an ephemeral session that keeps no cookies or cached responses and follows no redirects.
    public init(timeout: TimeInterval = 15) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        let session = URLSession(
            configuration: configuration, delegate: RedirectRefusingDelegate(), delegateQueue: nil)
        self.init(session: session, timeout: timeout)
    }

    /// A transport over the app's own session (for certificate pinning or a proxy configuration); that session's
    /// delegate decides about redirects.
    public init(session: URLSession, timeout: TimeInterval = 15) {
        self.session = session
        self.timeout = timeout
    }

    public func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        var urlRequest = URLRequest(
            url: request.url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        urlRequest.httpMethod = "GET"
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: urlRequest)
        guard let http = response as? HTTPURLResponse else {
            throw TokenGateClientError(code: .network, message: "the response was not HTTP")
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        return HTTPTransportResponse(status: http.statusCode, headers: headers, body: data)
    }
}

/// Refuses every redirect: the request carries `Authorization: Bearer <credential>`, and the gateway never redirects.
/// Stateless, hence `Sendable`.
final class RedirectRefusingDelegate: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
