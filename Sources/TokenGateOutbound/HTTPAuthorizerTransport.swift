package import AsyncHTTPClient
import NIOHTTP1
import OutboundHTTP
package import TokenGateCore

/// The one way TokenGate asks a client's authorizer over the network: one `GET` with `Accept: application/json`,
/// one attempt through the one outbound exchange (``RetryingExchange``), the request's deadline, the body read only
/// for a 200 and capped, and no redirect used (a 3xx comes back as its status, which the contract reads as no answer;
/// an answer from a redirect the client followed anyway is refused). Errors are described without the URL, which
/// names the caller's subject.
package struct HTTPAuthorizerTransport: AuthorizerTransport {
    let client: HTTPClient

    /// A transport over `client`, which its owner shuts down. Give it a client that does not follow redirects (as
    /// `OutboundExchange.clientConfiguration()`, the one `serve` shares, makes); one that does gets its redirected
    /// answers refused.
    package init(client: HTTPClient) {
        self.client = client
    }

    package func send(_ request: AuthorizerRequest) async throws -> AuthorizerResponse {
        var http = HTTPClientRequest(url: request.url)
        http.headers.add(name: "Accept", value: "application/json")
        // One attempt (the authorizer's caller decides about asking again). Only a 200's body matters; any other
        // answer is decided by its status, and its body is left unread.
        let exchange = RetryingExchange(client: client, retries: .once, maxBodyBytes: request.maxBodyBytes, readsBody: { $0 == 200 })
        return try await exchange.run(
            http,
            deadline: .now + request.timeout,
            expired: { Self.failure(.timedOut, timeout: request.timeout) },
            classify: { outcome, _ in
                switch outcome {
                case .success(let response) where response.status == 200: .done(AuthorizerResponse(status: 200, body: response.body))
                case .success(let response): .done(AuthorizerResponse(status: response.status))
                case .failure(let failure): .fail(Self.failure(failure, timeout: request.timeout))
                }
            })
    }

    static func failure(_ failure: OutboundExchange.Failure, timeout: Duration) -> AuthorizerTransportFailure {
        switch failure {
        case .timedOut, .bodyTimedOut:
            // The same words as the authorizer's own deadline, which this one races.
            AuthorizerTransportFailure("no answer within \(timeout)")
        case .unreachable(let reason):
            AuthorizerTransportFailure("the request failed (\(reason))")
        case .redirected:
            AuthorizerTransportFailure("the client followed a redirect; an authorizer's redirect is never used")
        case .bodyTooLarge(let limit):
            AuthorizerTransportFailure("the answer's body is over \(limit) bytes")
        case .bodyBroken(let reason):
            AuthorizerTransportFailure("the answer's body could not be read (\(reason))")
        }
    }
}
