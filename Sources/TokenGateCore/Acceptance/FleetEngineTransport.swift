/// Carries the acceptance check's one Fleet Engine call and brings back the raw answer.
///
/// TokenGateCore has no HTTP client: the HTTP face supplies one (`HTTPFleetEngineTransport`: AsyncHTTPClient, no
/// redirects, the one outbound policy). An implementation sends `GET request.url` with
/// `Authorization: Bearer <token>` and returns the status with at most `maxBodyBytes` of body, or throws when no
/// answer came (no connection, the deadline). It never retries and never logs the token.
package protocol FleetEngineTransport: Sendable {
    /// Fleet Engine's answer to `request`.
    func send(_ request: FleetEngineRequest) async throws -> FleetEngineResponse
}

/// One call to Fleet Engine.
package struct FleetEngineRequest: Sendable {
    /// The URL (the ID percent-encoded).
    package var url: String
    /// The token, sent as `Authorization: Bearer`; never logged.
    package var token: String
    /// The deadline of the whole exchange.
    package var timeout: Duration
    /// The largest body read: an error answer is small.
    package var maxBodyBytes = 64 * 1024

    /// A call to `url` with `token`.
    package init(url: String, token: String, timeout: Duration) {
        self.url = url
        self.token = token
        self.timeout = timeout
    }
}

/// Fleet Engine's raw answer.
package struct FleetEngineResponse: Sendable {
    /// The HTTP status code.
    package var status: Int
    /// The body (Google's `{"error": {"code", "message", "status"}}` for an error).
    package var body: [UInt8]

    /// An answer with `status` and `body`.
    package init(status: Int, body: [UInt8] = []) {
        self.status = status
        self.body = body
    }
}

/// The transport of an assembler given none: every call fails, so a configured check reports `unknown`, never
/// `accepted`.
struct UnavailableFleetEngineTransport: FleetEngineTransport {
    struct NoTransport: Error, CustomStringConvertible {
        var description: String { "this gateway was assembled without a Fleet Engine transport" }
    }

    func send(_ request: FleetEngineRequest) async throws -> FleetEngineResponse { throw NoTransport() }
}
