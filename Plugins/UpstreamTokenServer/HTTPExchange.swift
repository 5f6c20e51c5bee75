import AsyncHTTPClient
import NIOHTTP1
import OutboundHTTP
import TokenGateCore

/// One HTTP request to the upstream and the classification of what came back, shared by token calls and JWKS
/// fetches. The attempt itself follows the gateway's one outbound policy (``OutboundExchange``: the head within the
/// connect deadline, the body within the total one, capped, no redirect used).
enum HTTPExchange {
    /// What one attempt produced.
    enum Outcome: Sendable {
        /// A 2xx response's body, at most the cap.
        case body([UInt8])
        /// Worth another attempt: a connection failure, a 5xx or a 429. Carries the error to report if no attempt
        /// is left, and `Retry-After` in seconds when the upstream sent one.
        case retryable(TokenGateError, retryAfter: Int?)
        /// Final: a timeout, a redirect, another 4xx, an oversized or broken body.
        case final(TokenGateError)
    }

    /// Sends `request` once. `headDeadline` bounds connecting and the response head, `deadline` everything.
    static func attempt(
        _ request: HTTPClientRequest,
        client: HTTPClient,
        headDeadline: ContinuousClock.Instant,
        deadline: ContinuousClock.Instant,
        maxBodyBytes: Int,
        what: String
    ) async -> Outcome {
        let sent = await OutboundExchange.send(
            request, on: client, headDeadline: headDeadline, deadline: deadline, maxBodyBytes: maxBodyBytes,
            readsBody: { (200..<300).contains($0) })
        let response: OutboundExchange.Response
        switch sent {
        case .success(let answer):
            response = answer
        case .failure(.timedOut):
            return .final(TokenGateError(.backendTimeout, "\(what) did not answer in time"))
        case .failure(.unreachable(let reason)):
            // A refused connection is retried by the client until the connect deadline: by then it is a timeout.
            if ContinuousClock.now >= headDeadline { return .final(TokenGateError(.backendTimeout, "\(what) did not answer in time")) }
            return .retryable(TokenGateError(.backendUnavailable, "\(what) could not be reached (\(reason))"), retryAfter: nil)
        case .failure(.redirected):
            return .final(TokenGateError(.backendError, "\(what) redirected and the client followed; redirects are never used"))
        case .failure(.bodyTimedOut):
            return .final(TokenGateError(.backendTimeout, "\(what) did not send its body in time"))
        case .failure(.bodyTooLarge(let limit)):
            return .final(TokenGateError(.backendError, "\(what) sent a body larger than \(limit) bytes"))
        case .failure(.bodyBroken(let reason)):
            return .final(TokenGateError(.backendError, "\(what) sent a broken or truncated body (\(reason))"))
        }
        let status = response.status
        switch status {
        case 200..<300:
            return .body(response.body)
        case 300..<400:
            // Redirects are never followed: a token server that points elsewhere is misconfigured or compromised.
            return .final(TokenGateError(.backendError, "\(what) answered with redirect \(status), which is never followed"))
        case 429, 500..<600:
            let retryAfter = UpstreamRetryPolicy.retryAfter(response.headers.first(name: "Retry-After"))
            return .retryable(
                TokenGateError(.backendUnavailable, "\(what) answered \(status)", retryAfterSeconds: retryAfter),
                retryAfter: retryAfter
            )
        default:
            return .final(TokenGateError(.backendError, "\(what) answered \(status)"))
        }
    }
}
