/// Carries one question to a tenant's authorizer (a client's `authorizer:`) and brings back the raw answer.
///
/// TokenGateCore has no HTTP client: the HTTP face supplies one (`HTTPAuthorizerTransport`: AsyncHTTPClient, no
/// redirects) and unit tests supply in-memory ones. An implementation sends one `GET` to `request.url` and returns the
/// status with at most `request.maxBodyBytes` of body, or throws (no connection, a redirect it was made to follow, a
/// larger body). It never retries and never interprets the answer: `ProviderAuthorizer` reads the contract, and
/// bounds the whole exchange by `request.timeout` whatever the transport does.
///
/// ```swift
/// struct AlwaysYes: AuthorizerTransport {
///     func send(_ request: AuthorizerRequest) async throws -> AuthorizerResponse {
///         AuthorizerResponse(status: 200, body: Array(#"{"allowed":true}"#.utf8))
///     }
/// }
/// ```
package protocol AuthorizerTransport: Sendable {
    /// The answer to `request`.
    func send(_ request: AuthorizerRequest) async throws -> AuthorizerResponse
}

/// One question to an authorizer.
package struct AuthorizerRequest: Sendable {
    /// The expanded URL (values percent-encoded); it names the caller's subject, so it is never logged.
    package var url: String
    /// The deadline of the whole exchange.
    package var timeout: Duration
    /// The largest body read.
    package var maxBodyBytes: Int

    /// A question to `url`.
    package init(url: String, timeout: Duration, maxBodyBytes: Int = AuthorizerSettings.maxBodyBytes) {
        self.url = url
        self.timeout = timeout
        self.maxBodyBytes = maxBodyBytes
    }
}

/// An authorizer's raw answer.
package struct AuthorizerResponse: Sendable {
    /// The HTTP status code.
    package var status: Int
    /// The body (empty when the transport did not need to read it).
    package var body: [UInt8]

    /// An answer with `status` and `body`.
    package init(status: Int, body: [UInt8] = []) {
        self.status = status
        self.body = body
    }
}

/// The transport of an assembler given none: every question fails, so a client with an authorizer is refused with
/// `authorizer_unavailable`, never allowed.
struct UnavailableAuthorizerTransport: AuthorizerTransport {
    struct NoTransport: Error, CustomStringConvertible {
        var description: String { "this gateway was assembled without an authorizer transport" }
    }

    func send(_ request: AuthorizerRequest) async throws -> AuthorizerResponse { throw NoTransport() }
}
