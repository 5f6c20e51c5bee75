import AsyncHTTPClient
import NIOCore
package import NIOHTTP1

/// The one policy for each attempt of every request TokenGate sends to another server: Google's token and IAM
/// endpoints, an upstream token server, a JWKS URL, an authorizer, Fleet Engine. Callers go through
/// ``RetryingExchange``, which sends each attempt here; each caller's hook decides what to retry and what an answer
/// means, and this decides how one attempt is bounded:
/// - connecting and the response head within `headDeadline` (AsyncHTTPClient's deadline covers only those);
/// - the body within `deadline` as well, raced here, so a server that trickles bytes cannot hold a request past
///   its caller's bound, and at most `maxBodyBytes` of it;
/// - no redirect used: the clients are made with redirects disallowed, so a 3xx comes back as its status, and an
///   answer the client reached through a redirect anyway is refused (it came from a URL nobody configured).
package enum OutboundExchange {
    /// What a server answered.
    package struct Response: Sendable {
        package var status: Int
        package var headers: HTTPHeaders
        /// The whole body, or empty when the caller chose not to read it.
        package var body: [UInt8]

        /// The seconds the server's `Retry-After` asks to wait, by the one rule (``RetryAfter``); `nil` without one.
        package var retryAfterSeconds: Int? { RetryAfter.seconds(headers.first(name: "Retry-After")) }

        /// ``retryAfterSeconds`` as a duration.
        package var retryAfter: Duration? { retryAfterSeconds.map { .seconds($0) } }
    }

    /// Why an attempt got no usable answer. The reasons are safe to log: an error's type and code, never a URL
    /// (which may name a caller's subject) or a body.
    package enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// AsyncHTTPClient gave up waiting for a connection or the head at its deadline.
        case timedOut
        /// No connection, or it failed before the head. (AsyncHTTPClient retries a refused connection itself until
        /// the deadline, so this may come at the deadline too.)
        case unreachable(reason: String)
        /// The client followed a redirect.
        case redirected
        /// The body was not complete by `deadline`.
        case bodyTimedOut
        /// The body was longer than the cap.
        case bodyTooLarge(limit: Int)
        /// The connection broke while the body was read.
        case bodyBroken(reason: String)

        /// What happened, in words safe to log.
        package var description: String {
            switch self {
            case .timedOut: "no answer in time"
            case .unreachable(let reason): "unreachable (\(reason))"
            case .redirected: "redirected, and redirects are never used"
            case .bodyTimedOut: "the body did not arrive in time"
            case .bodyTooLarge(let limit): "a body over \(limit) bytes"
            case .bodyBroken(let reason): "a broken body (\(reason))"
            }
        }
    }

    /// Sends `request` once on `client`. `readsBody` says, from the status, whether the body is wanted (a body
    /// left unread is discarded with the connection's next use). Internal: callers outside this module go through
    /// ``RetryingExchange``, one attempt or more.
    static func send(
        _ request: HTTPClientRequest, on client: HTTPClient, headDeadline: ContinuousClock.Instant, deadline: ContinuousClock.Instant,
        maxBodyBytes: Int, readsBody: (Int) -> Bool = { _ in true }
    ) async -> Result<Response, Failure> {
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, deadline: nioDeadline(headDeadline))
        } catch {
            return .failure(isTimeout(error) ? .timedOut : .unreachable(reason: describe(error)))
        }
        guard response.history.count <= 1 else { return .failure(.redirected) }
        let status = Int(response.status.code)
        guard readsBody(status) else { return .success(Response(status: status, headers: response.headers, body: [])) }
        do {
            let bytes = try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
                group.addTask { Array(try await response.body.collect(upTo: maxBodyBytes).readableBytesView) }
                group.addTask {
                    try await Task.sleep(until: deadline, clock: .continuous)
                    return nil
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            guard let bytes else { return .failure(.bodyTimedOut) }
            return .success(Response(status: status, headers: response.headers, body: bytes))
        } catch is NIOTooManyBytesError {
            return .failure(.bodyTooLarge(limit: maxBodyBytes))
        } catch {
            if Task.isCancelled || ContinuousClock.now >= deadline { return .failure(.bodyTimedOut) }
            return .failure(.bodyBroken(reason: describe(error)))
        }
    }

    /// Whether AsyncHTTPClient reported a deadline or timeout rather than a failed connection.
    static func isTimeout(_ error: any Error) -> Bool {
        guard let error = error as? HTTPClientError else { return false }
        return [.deadlineExceeded, .readTimeout, .connectTimeout, .getConnectionFromPoolTimeout].contains(error)
    }

    /// The error's type and code, never a URL with secrets or a body.
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "\(error)" }
        if let error = error as? IOError { return "I/O error, errno \(error.errnoCode)" }
        if error is CancellationError { return "cancelled" }
        return String(describing: type(of: error))
    }

    /// NIO's deadline for `instant` (at most a day ahead).
    static func nioDeadline(_ instant: ContinuousClock.Instant) -> NIODeadline {
        .now() + timeAmount(instant - ContinuousClock.now)
    }

    /// `duration` as NIO's time amount: zero when negative, at most a day.
    static func timeAmount(_ duration: Duration) -> TimeAmount {
        guard duration > .zero else { return .zero }
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(min(seconds, 86_400) * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
