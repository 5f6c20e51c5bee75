package import AsyncHTTPClient

/// The one exchange for every request TokenGate sends to another server: Google's token endpoints and IAM, an
/// upstream token server, a JWKS URL, a client's authorizer, Fleet Engine, the CLI's call to a gateway's admin API.
/// (Only the test kits call AsyncHTTPClient directly.)
///
/// Each attempt is one ``OutboundExchange/send(_:on:headDeadline:deadline:maxBodyBytes:readsBody:)``: connecting
/// and the head within the attempt's head deadline, the body within the whole deadline and capped, no redirect used.
/// Between attempts the caller's hook decides; this decides how:
/// - before each attempt, a passed deadline ends the exchange with the caller's `expired()` failure;
/// - each outcome goes to the caller's `classify` hook: ``Verdict/done(_:)``, ``Verdict/fail(_:)``, or
///   ``Verdict/retry(_:after:)`` with the server's `Retry-After` (read by ``RetryAfter``, the one parser);
/// - a retry waits as ``RetryPolicy`` says (exponential, jittered, with a ceiling, at least `Retry-After`); past
///   `maxAttempts`, or when the wait would end at or past the deadline, the exchange ends at once with the retry's
///   failure, which carries what the caller wants reported (a `Retry-After` included).
///
/// ```swift
/// let exchange = RetryingExchange(client: client, retries: RetryPolicy(maxAttempts: 3), maxBodyBytes: 64 * 1024)
/// let body = try await exchange.run(request, deadline: .now + .seconds(5), expired: { KeyServerError("no answer in time") }) {
///     outcome, attempt in
///     switch outcome {
///     case .success(let answer) where answer.status == 200: .done(answer.body)
///     case .success(let answer) where answer.status == 429 || answer.status >= 500:
///         .retry(KeyServerError("answered \(answer.status)"), after: answer.retryAfter)
///     case .success(let answer): .fail(KeyServerError("answered \(answer.status)"))
///     case .failure(let failure): .fail(KeyServerError("\(failure)"))
///     }
/// }
/// ```
package struct RetryingExchange: Sendable {
    /// What the caller makes of one attempt's outcome.
    package enum Verdict<Value, Failure: Error> {
        /// The answer the caller wanted: the exchange returns it.
        case done(Value)
        /// Worth another attempt, not before `after` (the server's `Retry-After`, if it sent one). `failure` is what
        /// the exchange throws if no attempt is left or the deadline leaves no room for the wait.
        case retry(Failure, after: Duration?)
        /// Final: the exchange throws it.
        case fail(Failure)
    }

    /// One attempt, as the hook sees it.
    package struct Attempt: Sendable {
        /// 1 for the first attempt.
        package let number: Int
        /// Connecting and the response head end here: the deadline, or sooner with an attempt timeout.
        package let headDeadline: ContinuousClock.Instant
        /// The whole exchange ends here.
        package let deadline: ContinuousClock.Instant

        /// Whether the attempt's time for connecting and the head has run out (a failure reported then is its timeout).
        package var isPastHeadDeadline: Bool { ContinuousClock.now >= headDeadline }
        /// Whether the exchange's time has run out.
        package var isPastDeadline: Bool { ContinuousClock.now >= deadline }
    }

    /// How an exchange went, for the caller's logs and metrics.
    package enum Event<Failure: Error> {
        /// Attempt `attempt` failed and the next follows after `delay`.
        case retrying(Failure, attempt: Int, after: Duration)
        /// The attempts, or the time for another, ran out after `attempts`; `failure` is thrown.
        case gaveUp(Failure, attempts: Int)
        /// Attempt `attempt` (or the deadline before it) ended the exchange with a final failure.
        case failed(Failure, attempt: Int)
    }

    /// The client every attempt is sent on: the gateway's one (``OutboundExchange/clientConfiguration()``).
    package let client: HTTPClient
    /// Attempts and the waits between them.
    package var retries: RetryPolicy
    /// Bounds one attempt's connecting and head, within the deadline; `nil`: the deadline alone.
    package var attemptTimeout: Duration?
    /// The largest body read.
    package var maxBodyBytes: Int
    /// Whether a status's body is read; an unread body is discarded with the connection's next use.
    package var readsBody: @Sendable (Int) -> Bool
    /// Sleeping between attempts and the jitter.
    package var timing: RetryTiming

    /// An exchange on `client`; by default one attempt, every body read, real sleeping.
    package init(
        client: HTTPClient, retries: RetryPolicy = .once, attemptTimeout: Duration? = nil, maxBodyBytes: Int,
        readsBody: @escaping @Sendable (Int) -> Bool = { _ in true }, timing: RetryTiming = .live
    ) {
        self.client = client
        self.retries = retries
        self.attemptTimeout = attemptTimeout
        self.maxBodyBytes = maxBodyBytes
        self.readsBody = readsBody
        self.timing = timing
    }

    /// Sends `request` as every attempt, as ``run(deadline:expired:cancelledWait:observe:request:classify:)`` does.
    package func run<Value, Failure: Error>(
        _ request: HTTPClientRequest,
        deadline: ContinuousClock.Instant,
        expired: () -> Failure,
        cancelledWait: Failure? = nil,
        observe: (Event<Failure>) -> Void = { _ in },
        classify: (Result<OutboundExchange.Response, OutboundExchange.Failure>, Attempt) -> Verdict<Value, Failure>
    ) async throws(Failure) -> Value {
        try await run(
            deadline: deadline, expired: expired, cancelledWait: cancelledWait, observe: observe, request: { _ throws(Failure) in request },
            classify: classify)
    }

    /// Sends the request `request` makes for each attempt until `classify` says done or fail, the attempts run out,
    /// or `deadline` leaves no room.
    ///
    /// - Parameters:
    ///   - expired: the failure when the deadline has passed before an attempt.
    ///   - cancelledWait: the failure when the wait between attempts is cancelled; `nil`, the next attempt goes
    ///     ahead (and fails fast on the cancelled task).
    ///   - observe: told of each retry, the giving up and a final failure.
    ///   - request: the request of an attempt; a throw ends the exchange with that failure.
    ///   - classify: the caller's hook: what an attempt's outcome means.
    package func run<Value, Failure: Error>(
        deadline: ContinuousClock.Instant,
        expired: () -> Failure,
        cancelledWait: Failure? = nil,
        observe: (Event<Failure>) -> Void = { _ in },
        request: (Attempt) async throws(Failure) -> HTTPClientRequest,
        classify: (Result<OutboundExchange.Response, OutboundExchange.Failure>, Attempt) -> Verdict<Value, Failure>
    ) async throws(Failure) -> Value {
        var number = 0
        while true {
            number += 1
            let now = ContinuousClock.now
            guard now < deadline else {
                let failure = expired()
                observe(.failed(failure, attempt: number))
                throw failure
            }
            let attempt = Attempt(number: number, headDeadline: attemptTimeout.map { min(deadline, now + $0) } ?? deadline, deadline: deadline)
            let http = try await request(attempt)
            let outcome = await OutboundExchange.send(
                http, on: client, headDeadline: attempt.headDeadline, deadline: deadline, maxBodyBytes: maxBodyBytes, readsBody: readsBody)
            switch classify(outcome, attempt) {
            case .done(let value):
                return value
            case .fail(let failure):
                observe(.failed(failure, attempt: number))
                throw failure
            case .retry(let failure, let retryAfter):
                guard number < retries.maxAttempts else {
                    observe(.gaveUp(failure, attempts: number))
                    throw failure
                }
                let delay = retries.delay(beforeRetry: number, jitter: timing.jitter(), retryAfter: retryAfter)
                // A wait that would end past the deadline is pointless: report now, with Retry-After if known.
                guard ContinuousClock.now + delay < deadline else {
                    observe(.gaveUp(failure, attempts: number))
                    throw failure
                }
                observe(.retrying(failure, attempt: number, after: delay))
                do {
                    try await timing.sleep(delay)
                } catch {
                    if let cancelledWait { throw cancelledWait }
                }
            }
        }
    }
}
