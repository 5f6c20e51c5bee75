import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import TokenGateCore

/// One HTTP request and the classification of what came back, shared by token calls and JWKS fetches.
///
/// `execute(_:deadline:)` bounds the wait for the response head only; the body is read under a separate deadline
/// here, so an upstream that trickles bytes cannot hold a request past its total timeout.
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
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, deadline: nioDeadline(headDeadline))
        } catch {
            if isTimeout(error) || ContinuousClock.now >= headDeadline {
                return .final(TokenGateError(.backendTimeout, "\(what) did not answer in time"))
            }
            return .retryable(TokenGateError(.backendUnavailable, "\(what) could not be reached (\(describe(error)))"), retryAfter: nil)
        }
        // A client left to follow redirects would have done so already; an answer from another URL is not used.
        guard response.history.count <= 1 else {
            return .final(TokenGateError(.backendError, "\(what) redirected and the client followed; redirects are never used"))
        }
        let status = Int(response.status.code)
        switch status {
        case 200..<300:
            return await readBody(response, maxBodyBytes: maxBodyBytes, deadline: deadline, what: what)
        case 300..<400:
            // Redirects are never followed: a token server that points elsewhere is misconfigured or compromised.
            return .final(TokenGateError(.backendError, "\(what) answered with redirect \(status), which is never followed"))
        case 429, 500..<600:
            let retryAfter = RetryPolicy.retryAfter(response.headers.first(name: "Retry-After"))
            return .retryable(
                TokenGateError(.backendUnavailable, "\(what) answered \(status)", retryAfterSeconds: retryAfter),
                retryAfter: retryAfter
            )
        default:
            return .final(TokenGateError(.backendError, "\(what) answered \(status)"))
        }
    }

    private static func readBody(
        _ response: HTTPClientResponse,
        maxBodyBytes: Int,
        deadline: ContinuousClock.Instant,
        what: String
    ) async -> Outcome {
        do {
            let bytes = try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
                group.addTask {
                    let buffer = try await response.body.collect(upTo: maxBodyBytes)
                    return Array(buffer.readableBytesView)
                }
                group.addTask {
                    try await Task.sleep(until: deadline, clock: .continuous)
                    return nil
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            guard let bytes else { return .final(TokenGateError(.backendTimeout, "\(what) did not send its body in time")) }
            return .body(bytes)
        } catch is NIOTooManyBytesError {
            return .final(TokenGateError(.backendError, "\(what) sent a body larger than \(maxBodyBytes) bytes"))
        } catch {
            if Task.isCancelled || ContinuousClock.now >= deadline {
                return .final(TokenGateError(.backendTimeout, "\(what) did not send its body in time"))
            }
            return .final(TokenGateError(.backendError, "\(what) sent a broken or truncated body (\(describe(error)))"))
        }
    }

    static func isTimeout(_ error: any Error) -> Bool {
        guard let error = error as? HTTPClientError else { return false }
        return [.deadlineExceeded, .readTimeout, .connectTimeout, .getConnectionFromPoolTimeout].contains(error)
    }

    /// The error's type and code, never a URL with secrets or a body.
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "\(error)" }
        if let error = error as? IOError { return "I/O error, errno \(error.errnoCode)" }
        return String(describing: type(of: error))
    }

    static func nioDeadline(_ instant: ContinuousClock.Instant) -> NIODeadline {
        .now() + timeAmount(instant - ContinuousClock.now)
    }

    static func timeAmount(_ duration: Duration) -> TimeAmount {
        guard duration > .zero else { return .zero }
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .hours(24) : .nanoseconds(whole + attoseconds / 1_000_000_000)
    }
}
