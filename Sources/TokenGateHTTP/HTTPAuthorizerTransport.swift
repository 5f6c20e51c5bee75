package import AsyncHTTPClient
import NIOHTTP1
import OutboundHTTP
package import TokenGateCore

/// The one way TokenGate asks a client's authorizer over the network: AsyncHTTPClient, one `GET` with
/// `Accept: application/json`, the request's deadline, the body read only for a 200 and capped, and no redirect used
/// (a 3xx comes back as its status, which the contract reads as no answer; an answer from a redirect the client
/// followed anyway is refused). Errors are described without the URL, which names the caller's subject.
package struct HTTPAuthorizerTransport: AuthorizerTransport {
    let client: HTTPClient

    /// A transport over `client`, which its owner shuts down. Give it a client that does not follow redirects
    /// (as `UpstreamTokenServerFactory.recommendedConfiguration()`, the one `serve` shares, makes); one that does
    /// gets its redirected answers refused.
    package init(client: HTTPClient) {
        self.client = client
    }

    package func send(_ request: AuthorizerRequest) async throws -> AuthorizerResponse {
        var http = HTTPClientRequest(url: request.url)
        http.headers.add(name: "Accept", value: "application/json")
        let deadline = ContinuousClock.now + request.timeout
        // Only a 200's body matters; any other answer is decided by its status, and its body is left unread.
        let sent = await OutboundExchange.send(
            http, on: client, headDeadline: deadline, deadline: deadline, maxBodyBytes: request.maxBodyBytes, readsBody: { $0 == 200 })
        switch sent {
        case .success(let response):
            return response.status == 200 ? AuthorizerResponse(status: 200, body: response.body) : AuthorizerResponse(status: response.status)
        case .failure(.timedOut), .failure(.bodyTimedOut):
            // The same words as the authorizer's own deadline, which this one races.
            throw AuthorizerTransportFailure("no answer within \(request.timeout)")
        case .failure(.unreachable(let reason)):
            throw AuthorizerTransportFailure("the request failed (\(reason))")
        case .failure(.redirected):
            throw AuthorizerTransportFailure("the client followed a redirect; an authorizer's redirect is never used")
        case .failure(.bodyTooLarge(let limit)):
            throw AuthorizerTransportFailure("the answer's body is over \(limit) bytes")
        case .failure(.bodyBroken(let reason)):
            throw AuthorizerTransportFailure("the answer's body could not be read (\(reason))")
        }
    }
}
