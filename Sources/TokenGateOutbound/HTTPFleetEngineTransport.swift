package import AsyncHTTPClient
import NIOHTTP1
import OutboundHTTP
package import TokenGateCore

/// The acceptance check's calls to Fleet Engine: one `GET` with the token as a bearer credential, one attempt through
/// the one outbound exchange (``RetryingExchange``: the deadline covers the body, the body is capped, no redirect
/// used). Errors name what failed, never the URL's token or the token.
package struct HTTPFleetEngineTransport: FleetEngineTransport {
    let client: HTTPClient

    /// A transport over `client`, which its owner shuts down.
    package init(client: HTTPClient) {
        self.client = client
    }

    package func send(_ request: FleetEngineRequest) async throws -> FleetEngineResponse {
        var http = HTTPClientRequest(url: request.url)
        http.headers.add(name: "Authorization", value: "Bearer \(request.token)")
        http.headers.add(name: "Accept", value: "application/json")
        // One attempt: the check's verdict is about this call, and the next check comes on its schedule.
        let exchange = RetryingExchange(client: client, retries: .once, maxBodyBytes: request.maxBodyBytes)
        return try await exchange.run(
            http,
            deadline: .now + request.timeout,
            expired: { Self.failure(.timedOut, timeout: request.timeout) },
            classify: { outcome, _ in
                switch outcome {
                case .success(let response): .done(FleetEngineResponse(status: response.status, body: response.body))
                case .failure(let failure): .fail(Self.failure(failure, timeout: request.timeout))
                }
            })
    }

    static func failure(_ failure: OutboundExchange.Failure, timeout: Duration) -> FleetEngineTransportFailure {
        switch failure {
        case .timedOut, .bodyTimedOut:
            FleetEngineTransportFailure("no answer within \(timeout)")
        case .unreachable(let reason):
            FleetEngineTransportFailure("the request failed (\(reason))")
        case .redirected:
            FleetEngineTransportFailure("the client followed a redirect; Fleet Engine's answer must come from its endpoint")
        case .bodyTooLarge(let limit):
            FleetEngineTransportFailure("the answer's body is over \(limit) bytes")
        case .bodyBroken(let reason):
            FleetEngineTransportFailure("the answer's body could not be read (\(reason))")
        }
    }
}

/// Why a call to Fleet Engine got no answer.
struct FleetEngineTransportFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
