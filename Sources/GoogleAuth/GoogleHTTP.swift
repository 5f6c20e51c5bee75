import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import OutboundHTTP

/// Sends requests to Google with a deadline, a capped body and retries: a connection failure, 429 or 5xx is tried
/// again (3 attempts in all, exponential backoff with jitter, never past the deadline); any other 4xx is final.
struct GoogleHTTP: Sendable {
    /// Google's token answers are a few hundred bytes; error pages a few kilobytes.
    static let maximumBodyBytes = 64 * 1024

    let client: HTTPClient
    let logger: Logger
    var maximumAttempts = 3
    var initialBackoff: Duration = .milliseconds(100)

    /// The 2xx answer to `request`, or the error that ended the last attempt. `expectMetadataFlavor`: the answer
    /// must carry `Metadata-Flavor: Google`, as the metadata server's do (anything else is not the metadata server).
    func send(
        _ request: GoogleRequest, deadline: ContinuousClock.Instant, expectMetadataFlavor: Bool = false
    ) async throws(GoogleAuthError) -> GoogleAnswer {
        var attempt = 1
        while true {
            let outcome = await self.attempt(request, deadline: deadline, expectMetadataFlavor: expectMetadataFlavor)
            switch outcome {
            case .answer(let answer):
                return answer
            case .final(let error):
                logger.debug("google auth request failed", metadata: ["what": "\(request.what)", "reason": "\(error.message)"])
                throw error
            case .retryable(let error, let retryAfter):
                let delay = backoff(beforeRetry: attempt, retryAfter: retryAfter)
                guard attempt < maximumAttempts, ContinuousClock.now + delay < deadline else {
                    logger.debug("google auth request gave up", metadata: ["what": "\(request.what)", "attempts": "\(attempt)"])
                    throw error
                }
                logger.debug(
                    "google auth request retried",
                    metadata: ["what": "\(request.what)", "attempt": "\(attempt)", "reason": "\(error.message)"]
                )
                attempt += 1
                // Cancellation ends the wait early; the next attempt then fails fast on the cancelled task.
                try? await Task.sleep(for: delay)
            }
        }
    }

    /// `initialBackoff · 2^(retry-1)` scaled by jitter in 0.5...1, at least the server's `Retry-After`.
    func backoff(beforeRetry retry: Int, retryAfter: Duration?) -> Duration {
        let base = initialBackoff * (1 << min(max(retry - 1, 0), 10))
        let jittered = base * Double.random(in: 0.5...1)
        guard let retryAfter, retryAfter > jittered else { return jittered }
        return retryAfter
    }

    private enum Outcome: Sendable {
        case answer(GoogleAnswer)
        case retryable(GoogleAuthError, retryAfter: Duration?)
        case final(GoogleAuthError)
    }

    private func attempt(
        _ request: GoogleRequest, deadline: ContinuousClock.Instant, expectMetadataFlavor: Bool
    ) async -> Outcome {
        guard ContinuousClock.now < deadline else { return .final(GoogleAuthError(.timeout, "\(request.what) did not answer in time")) }
        var httpRequest = HTTPClientRequest(url: request.url)
        httpRequest.method = HTTPMethod(rawValue: request.method)
        for (name, value) in request.headers { httpRequest.headers.add(name: name, value: value) }
        if let body = request.body { httpRequest.body = .bytes(ByteBuffer(bytes: body)) }
        // AsyncHTTPClient pools connections per TLS configuration: a client certificate gets connections of its own.
        httpRequest.tlsConfiguration = request.tlsConfiguration
        let response: OutboundExchange.Response
        switch await OutboundExchange.send(httpRequest, on: client, headDeadline: deadline, deadline: deadline, maxBodyBytes: Self.maximumBodyBytes) {
        case .success(let answer):
            response = answer
        case .failure(.timedOut):
            return .final(GoogleAuthError(.timeout, "\(request.what) did not answer in time"))
        case .failure(.bodyTimedOut):
            return .final(GoogleAuthError(.timeout, "\(request.what) did not send its answer in time"))
        case .failure(.unreachable(let reason)):
            // AsyncHTTPClient retries a refused connection itself until the deadline, then reports the last
            // connect error: that is "unreachable", whenever it comes.
            let unreachable = GoogleAuthError(.unreachable, "\(request.what) could not be reached (\(reason))")
            return ContinuousClock.now >= deadline ? .final(unreachable) : .retryable(unreachable, retryAfter: nil)
        case .failure(.redirected):
            // A redirect the client followed would send credentials to a URL nobody checked: its answer is not used.
            return .final(GoogleAuthError(.malformedAnswer, "\(request.what) redirected; redirects are never followed"))
        case .failure(.bodyTooLarge(let limit)):
            return .final(GoogleAuthError(.malformedAnswer, "\(request.what) answered with more than \(limit) bytes"))
        case .failure(.bodyBroken(let reason)):
            return .final(GoogleAuthError(.unreachable, "\(request.what) sent a broken answer (\(reason))"))
        }
        let status = response.status
        let body = response.body
        switch status {
        case 200..<300:
            if expectMetadataFlavor, response.headers.first(name: "Metadata-Flavor") != "Google" {
                return .final(GoogleAuthError(.malformedAnswer, "\(request.what) answered without \"Metadata-Flavor: Google\""))
            }
            return .answer(GoogleAnswer(body: body, what: request.what))
        case 429, 500..<600:
            let error = refusal(status, body, request)
            let retryAfter = response.headers.first(name: "Retry-After").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            return .retryable(error, retryAfter: retryAfter.map { .seconds(max(0, $0)) })
        default:
            return .final(refusal(status, body, request))
        }
    }

    private func refusal(_ status: Int, _ body: [UInt8], _ request: GoogleRequest) -> GoogleAuthError {
        let detail = GoogleErrorBody.summary(body, scrubbing: request.secrets).map { ": \($0)" } ?? ""
        return GoogleAuthError(.refused(status: status), "\(request.what) answered \(status)\(detail)")
    }
}
