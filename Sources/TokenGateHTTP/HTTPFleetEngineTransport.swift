package import AsyncHTTPClient
import NIOHTTP1
import OutboundHTTP
package import TokenGateCore

/// The acceptance check's calls to Fleet Engine: AsyncHTTPClient, one `GET` with the token as a bearer credential,
/// under the one outbound policy (``OutboundExchange``: the deadline covers the body, the body is capped, no
/// redirect used). Errors name what failed, never the URL's token or the token.
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
        let deadline = ContinuousClock.now + request.timeout
        switch await OutboundExchange.send(http, on: client, headDeadline: deadline, deadline: deadline, maxBodyBytes: request.maxBodyBytes) {
        case .success(let response):
            return FleetEngineResponse(status: response.status, body: response.body)
        case .failure(.timedOut), .failure(.bodyTimedOut):
            throw FleetEngineTransportFailure("no answer within \(request.timeout)")
        case .failure(.unreachable(let reason)):
            throw FleetEngineTransportFailure("the request failed (\(reason))")
        case .failure(.redirected):
            throw FleetEngineTransportFailure("the client followed a redirect; Fleet Engine's answer must come from its endpoint")
        case .failure(.bodyTooLarge(let limit)):
            throw FleetEngineTransportFailure("the answer's body is over \(limit) bytes")
        case .failure(.bodyBroken(let reason)):
            throw FleetEngineTransportFailure("the answer's body could not be read (\(reason))")
        }
    }
}

/// Why a call to Fleet Engine got no answer.
struct FleetEngineTransportFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
