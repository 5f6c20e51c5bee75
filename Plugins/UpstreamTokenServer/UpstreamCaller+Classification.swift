import OutboundHTTP
import TokenGateCore

extension UpstreamCaller {
    /// The hook for the one retrying exchange: what one attempt's outcome means for a call to the token server.
    /// Connection failures, 5xx and 429 are retried (the upstream's `Retry-After` waited for and reported); a
    /// timeout, a redirect, any other 4xx, an oversized or broken body are final; a 2xx body is the answer.
    static func classify(
        _ outcome: Result<OutboundExchange.Response, OutboundExchange.Failure>, _ attempt: RetryingExchange.Attempt, what: String
    ) -> RetryingExchange.Verdict<[UInt8], any Error> {
        let response: OutboundExchange.Response
        switch outcome {
        case .success(let answer):
            response = answer
        case .failure(.timedOut):
            return .fail(TokenGateError(.backendTimeout, "\(what) did not answer in time"))
        case .failure(.unreachable(let reason)):
            // A refused connection is retried by the client until the connect deadline: by then it is a timeout.
            if attempt.isPastHeadDeadline { return .fail(TokenGateError(.backendTimeout, "\(what) did not answer in time")) }
            return .retry(TokenGateError(.backendUnavailable, "\(what) could not be reached (\(reason))"), after: nil)
        case .failure(.redirected):
            return .fail(TokenGateError(.backendError, "\(what) redirected and the client followed; redirects are never used"))
        case .failure(.bodyTimedOut):
            return .fail(TokenGateError(.backendTimeout, "\(what) did not send its body in time"))
        case .failure(.bodyTooLarge(let limit)):
            return .fail(TokenGateError(.backendError, "\(what) sent a body larger than \(limit) bytes"))
        case .failure(.bodyBroken(let reason)):
            return .fail(TokenGateError(.backendError, "\(what) sent a broken or truncated body (\(reason))"))
        }
        let status = response.status
        switch status {
        case 200..<300:
            return .done(response.body)
        case 300..<400:
            // Redirects are never followed: a token server that points elsewhere is misconfigured or compromised.
            return .fail(TokenGateError(.backendError, "\(what) answered with redirect \(status), which is never followed"))
        case 429, 500..<600:
            let retryAfter = response.retryAfterSeconds
            return .retry(
                TokenGateError(.backendUnavailable, "\(what) answered \(status)", retryAfterSeconds: retryAfter), after: response.retryAfter)
        default:
            return .fail(TokenGateError(.backendError, "\(what) answered \(status)"))
        }
    }
}
