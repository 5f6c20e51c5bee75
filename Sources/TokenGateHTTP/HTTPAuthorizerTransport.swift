package import AsyncHTTPClient
import NIOCore
import NIOHTTP1
package import TokenGateCore

/// The one way TokenGate asks a client's authorizer over the network: AsyncHTTPClient, one `GET` with
/// `Accept: application/json`, the request's deadline, the body read only for a 200 and capped, and no redirect used
/// (a 3xx comes back as its status, which the contract reads as no answer; an answer from a redirect the client
/// followed anyway is refused). Errors are described without the URL, which names the caller's subject.
package struct HTTPAuthorizerTransport: AuthorizerTransport {
    let client: HTTPClient

    /// A transport over `client`, which its owner shuts down. Give it a client that does not follow redirects
    /// (as `UpstreamHTTPProviderFactory.recommendedConfiguration()`, the one `serve` shares, makes); one that does
    /// gets its redirected answers refused.
    package init(client: HTTPClient) {
        self.client = client
    }

    package func send(_ request: AuthorizerRequest) async throws -> AuthorizerResponse {
        var http = HTTPClientRequest(url: request.url)
        http.headers.add(name: "Accept", value: "application/json")
        let response: HTTPClientResponse
        do {
            response = try await client.execute(http, timeout: Self.timeAmount(request.timeout))
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            // The same words as the authorizer's own deadline, which this one races.
            throw AuthorizerTransportFailure("no answer within \(request.timeout)")
        } catch let error as HTTPClientError {
            throw AuthorizerTransportFailure("the request failed (\(error))")
        } catch is CancellationError {
            throw AuthorizerTransportFailure("the request was cancelled")
        } catch {
            throw AuthorizerTransportFailure("the request failed (\(type(of: error)))")
        }
        guard response.history.count <= 1 else {
            throw AuthorizerTransportFailure("the client followed a redirect; an authorizer's redirect is never used")
        }
        let status = Int(response.status.code)
        // Only a 200's body matters; any other answer is decided by its status, and its body is left unread.
        guard status == 200 else { return AuthorizerResponse(status: status) }
        do {
            let body = try await response.body.collect(upTo: request.maxBodyBytes)
            return AuthorizerResponse(status: status, body: Array(buffer: body))
        } catch is NIOTooManyBytesError {
            throw AuthorizerTransportFailure("the answer's body is over \(request.maxBodyBytes) bytes")
        } catch {
            throw AuthorizerTransportFailure("the answer's body could not be read (\(type(of: error)))")
        }
    }

    static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
