import AsyncHTTPClient
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import OutboundHTTP

/// Sends requests to Google through the one retrying exchange (``RetryingExchange``): a deadline, a capped body and
/// retries; a connection failure, 429 or 5xx is tried again (3 attempts in all, exponential backoff with jitter,
/// at least the `Retry-After`, never past the deadline); any other 4xx is final.
struct GoogleHTTP: Sendable {
    /// Google's token answers are a few hundred bytes; error pages a few kilobytes.
    static let maximumBodyBytes = 64 * 1024
    /// 3 attempts: 100 ms, then 200 ms between them (each up to half shorter at random); the 2 s ceiling is never
    /// reached.
    static let retries = RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(100), maxBackoff: .seconds(2))

    let client: HTTPClient
    let logger: Logger
    var retries = GoogleHTTP.retries

    /// The 2xx answer to `request`, or the error that ended the last attempt. `expectMetadataFlavor`: the answer
    /// must carry `Metadata-Flavor: Google`, as the metadata server's do (anything else is not the metadata server).
    func send(
        _ request: GoogleRequest, deadline: ContinuousClock.Instant, expectMetadataFlavor: Bool = false
    ) async throws(GoogleAuthError) -> GoogleAnswer {
        var httpRequest = HTTPClientRequest(url: request.url)
        httpRequest.method = HTTPMethod(rawValue: request.method)
        for (name, value) in request.headers { httpRequest.headers.add(name: name, value: value) }
        if let body = request.body { httpRequest.body = .bytes(ByteBuffer(bytes: body)) }
        // AsyncHTTPClient pools connections per TLS configuration: a client certificate gets connections of its own.
        httpRequest.tlsConfiguration = request.tlsConfiguration
        let exchange = RetryingExchange(client: client, retries: retries, maxBodyBytes: Self.maximumBodyBytes)
        // A cancelled wait between attempts goes on to the next, which fails fast on the cancelled task.
        return try await exchange.run(
            httpRequest,
            deadline: deadline,
            expired: { GoogleAuthError(.timeout, "\(request.what) did not answer in time") },
            observe: { log($0, request) },
            classify: { outcome, attempt in classify(outcome, attempt, request, expectMetadataFlavor: expectMetadataFlavor) }
        )
    }

    /// The hook: what one attempt's outcome means for a Google request.
    private func classify(
        _ outcome: Result<OutboundExchange.Response, OutboundExchange.Failure>, _ attempt: RetryingExchange.Attempt, _ request: GoogleRequest,
        expectMetadataFlavor: Bool
    ) -> RetryingExchange.Verdict<GoogleAnswer, GoogleAuthError> {
        let response: OutboundExchange.Response
        switch outcome {
        case .success(let answer):
            response = answer
        case .failure(.timedOut):
            return .fail(GoogleAuthError(.timeout, "\(request.what) did not answer in time"))
        case .failure(.bodyTimedOut):
            return .fail(GoogleAuthError(.timeout, "\(request.what) did not send its answer in time"))
        case .failure(.unreachable(let reason)):
            // AsyncHTTPClient retries a refused connection itself until the deadline, then reports the last
            // connect error: that is "unreachable", whenever it comes.
            let unreachable = GoogleAuthError(.unreachable, "\(request.what) could not be reached (\(reason))")
            return attempt.isPastDeadline ? .fail(unreachable) : .retry(unreachable, after: nil)
        case .failure(.redirected):
            // A redirect the client followed would send credentials to a URL nobody checked: its answer is not used.
            return .fail(GoogleAuthError(.malformedAnswer, "\(request.what) redirected; redirects are never followed"))
        case .failure(.bodyTooLarge(let limit)):
            return .fail(GoogleAuthError(.malformedAnswer, "\(request.what) answered with more than \(limit) bytes"))
        case .failure(.bodyBroken(let reason)):
            return .fail(GoogleAuthError(.unreachable, "\(request.what) sent a broken answer (\(reason))"))
        }
        let status = response.status
        switch status {
        case 200..<300:
            if expectMetadataFlavor, response.headers.first(name: "Metadata-Flavor") != "Google" {
                return .fail(GoogleAuthError(.malformedAnswer, "\(request.what) answered without \"Metadata-Flavor: Google\""))
            }
            return .done(GoogleAnswer(body: response.body, what: request.what))
        case 429, 500..<600:
            return .retry(refusal(status, response.body, request), after: response.retryAfter)
        default:
            return .fail(refusal(status, response.body, request))
        }
    }

    private func log(_ event: RetryingExchange.Event<GoogleAuthError>, _ request: GoogleRequest) {
        switch event {
        case .failed(let error, _):
            logger.debug("google auth request failed", metadata: ["what": "\(request.what)", "reason": "\(error.message)"])
        case .gaveUp(_, let attempts):
            logger.debug("google auth request gave up", metadata: ["what": "\(request.what)", "attempts": "\(attempts)"])
        case .retrying(let error, let attempt, _):
            logger.debug(
                "google auth request retried", metadata: ["what": "\(request.what)", "attempt": "\(attempt)", "reason": "\(error.message)"])
        }
    }

    private func refusal(_ status: Int, _ body: [UInt8], _ request: GoogleRequest) -> GoogleAuthError {
        let detail = GoogleErrorBody.summary(body, scrubbing: request.secrets).map { ": \($0)" } ?? ""
        return GoogleAuthError(.refused(status: status), "\(request.what) answered \(status)\(detail)")
    }
}
