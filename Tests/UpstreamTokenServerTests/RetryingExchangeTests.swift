import AsyncHTTPClient
import NIOCore
import OutboundHTTP
import Testing

/// The one retrying exchange against a real loopback server: it retries only what the caller's hook says, as often
/// as the policy allows, waits at least the server's `Retry-After` while the deadline leaves room, and never waits or
/// sends past the deadline.
@Suite struct RetryingExchangeTests {
    /// What the hook reports; `status` 0 for an attempt that got no answer.
    struct Refused: Error, Equatable {
        var status: Int
    }

    /// The hook these tests use: a 200 is done (with the attempt's number), 429 and 5xx are retried with the server's
    /// `Retry-After`, a failed attempt is retried, any other status is final.
    static func classify(
        _ outcome: Result<OutboundExchange.Response, OutboundExchange.Failure>, _ attempt: RetryingExchange.Attempt
    ) -> RetryingExchange.Verdict<Int, Refused> {
        switch outcome {
        case .success(let answer) where answer.status == 200: .done(attempt.number)
        case .success(let answer) where answer.status == 429 || answer.status >= 500: .retry(Refused(status: answer.status), after: answer.retryAfter)
        case .success(let answer): .fail(Refused(status: answer.status))
        case .failure: .retry(Refused(status: 0), after: nil)
        }
    }

    /// A server, the gateway's client configuration, and timing that records the waits (really waiting them only
    /// when `sleepsForReal`).
    struct Harness {
        let server: ScriptedUpstream
        let client: HTTPClient
        let sleeps = Locked<[Duration]>([])

        func exchange(_ retries: RetryPolicy, attemptTimeout: Duration? = nil, sleepsForReal: Bool = false) -> RetryingExchange {
            let timing = RetryTiming(
                sleep: { [sleeps] delay in
                    sleeps.withLock { $0.append(delay) }
                    if sleepsForReal { try await Task.sleep(for: delay) }
                },
                jitter: { 1 })
            return RetryingExchange(client: client, retries: retries, attemptTimeout: attemptTimeout, maxBodyBytes: 1024, timing: timing)
        }

        func run(_ exchange: RetryingExchange, within timeout: Duration = .seconds(300)) async throws -> Int {
            try await exchange.run(
                HTTPClientRequest(url: "\(server.baseURL)/x"), deadline: .now + timeout, expired: { Refused(status: -1) },
                classify: RetryingExchangeTests.classify)
        }
    }

    static func withHarness(_ body: (Harness) async throws -> Void) async throws {
        let server = try await ScriptedUpstream.start()
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: OutboundExchange.clientConfiguration())
        do {
            try await body(Harness(server: server, client: client))
        } catch {
            try await client.shutdown()
            await server.stop()
            throw error
        }
        try await client.shutdown()
        await server.stop()
    }

    static let ok = ScriptedUpstream.Action.json("{}")
    static func unavailable(retryAfter: String? = nil) -> ScriptedUpstream.Action {
        .respond(status: 503, headers: retryAfter.map { [("Retry-After", $0)] } ?? [])
    }

    // MARK: What is retried

    @Test func whatTheHookRetriesIsRetriedWithBackoff() async throws {
        try await Self.withHarness { harness in
            harness.server.script("/x", [Self.unavailable(), .respond(status: 429), Self.ok])
            let policy = RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(10), maxBackoff: .seconds(1))
            let attempts = try await harness.run(harness.exchange(policy))
            #expect(attempts == 3)
            #expect(harness.server.calls(to: "/x") == 3)
            #expect(harness.sleeps.value == [.milliseconds(10), .milliseconds(20)])
        }
    }

    @Test func whatTheHookCallsFinalIsNotRetried() async throws {
        try await Self.withHarness { harness in
            harness.server.script("/x", [.respond(status: 404), Self.ok])
            await #expect(throws: Refused(status: 404)) { try await harness.run(harness.exchange(RetryPolicy(maxAttempts: 3))) }
            #expect(harness.server.calls(to: "/x") == 1)
            #expect(harness.sleeps.value.isEmpty)
        }
    }

    @Test func theAttemptsEndAtMaxAttemptsWithTheLastFailure() async throws {
        try await Self.withHarness { harness in
            harness.server.script("/x", [Self.unavailable(), .respond(status: 500), Self.ok])
            let policy = RetryPolicy(maxAttempts: 2, initialBackoff: .milliseconds(1))
            await #expect(throws: Refused(status: 500)) { try await harness.run(harness.exchange(policy)) }
            #expect(harness.server.calls(to: "/x") == 2)
            #expect(harness.sleeps.value.count == 1)
        }
    }

    @Test func oneAttemptIsOnce() async throws {
        try await Self.withHarness { harness in
            harness.server.script("/x", [Self.unavailable(), Self.ok])
            await #expect(throws: Refused(status: 503)) { try await harness.run(harness.exchange(.once)) }
            #expect(harness.server.calls(to: "/x") == 1)
        }
    }

    @Test func anAttemptWithoutAnswerEndsAtTheAttemptTimeoutAndIsRetried() async throws {
        try await Self.withHarness { harness in
            harness.server.script("/x", [.neverAnswer, Self.ok])
            // The first attempt ends at its own timeout, far before the deadline, and the next one gets the answer (a
            // starved machine may time out a further attempt or two).
            let exchange = harness.exchange(RetryPolicy(maxAttempts: 5, initialBackoff: .milliseconds(1)), attemptTimeout: .seconds(1))
            let attempts = try await harness.run(exchange)
            #expect(attempts >= 2)
            #expect(harness.server.calls(to: "/x") == attempts)
        }
    }

    // MARK: Retry-After and the deadline

    @Test func retryAfterInSecondsIsWaitedForWithinTheDeadline() async throws {
        try await Self.withHarness { harness in
            harness.server.script("/x", [Self.unavailable(retryAfter: "1"), Self.ok])
            let started = ContinuousClock.now
            let exchange = harness.exchange(RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(10)), sleepsForReal: true)
            let attempts = try await harness.run(exchange)
            #expect(attempts == 2)
            #expect(harness.sleeps.value == [.seconds(1)])
            #expect(ContinuousClock.now - started >= .seconds(1))
        }
    }

    @Test func retryAfterAsAnHTTPDateIsWaitedForWithinTheDeadline() async throws {
        try await Self.withHarness { harness in
            let inTwoMinutes = Self.imfFixdate(RetryAfter.wallSeconds() + 120)
            harness.server.script("/x", [Self.unavailable(retryAfter: inTwoMinutes), Self.ok])
            let exchange = harness.exchange(RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(10)))
            let attempts = try await harness.run(exchange)
            #expect(attempts == 2)
            // Whole seconds: 120 from when the date was written, less by the time the answer is read (recorded, not slept).
            let waited = try #require(harness.sleeps.value.first)
            #expect(waited >= .seconds(60) && waited <= .seconds(120))
        }
    }

    @Test func aRetryAfterPastTheDeadlineEndsTheExchangeAtOnce() async throws {
        try await Self.withHarness { harness in
            harness.server.script("/x", [Self.unavailable(retryAfter: "120"), Self.ok])
            await #expect(throws: Refused(status: 503)) {
                try await harness.run(harness.exchange(RetryPolicy(maxAttempts: 3), sleepsForReal: true), within: .seconds(30))
            }
            #expect(harness.server.calls(to: "/x") == 1)
            #expect(harness.sleeps.value.isEmpty)
        }
    }

    @Test func aBackoffPastTheDeadlineEndsTheExchangeAtOnce() async throws {
        try await Self.withHarness { harness in
            harness.server.script("/x", [Self.unavailable(), Self.ok])
            let policy = RetryPolicy(maxAttempts: 3, initialBackoff: .seconds(120), maxBackoff: .seconds(120))
            await #expect(throws: Refused(status: 503)) { try await harness.run(harness.exchange(policy, sleepsForReal: true), within: .seconds(30)) }
            #expect(harness.server.calls(to: "/x") == 1)
            #expect(harness.sleeps.value.isEmpty)
        }
    }

    @Test func noAttemptIsSentPastTheDeadline() async throws {
        try await Self.withHarness { harness in
            harness.server.script("/x", [Self.ok])
            await #expect(throws: Refused(status: -1)) { try await harness.run(harness.exchange(RetryPolicy(maxAttempts: 3)), within: .zero) }
            #expect(harness.server.calls(to: "/x") == 0)
        }
    }

    @Test func attemptsUntilTheDeadlineStopThere() async throws {
        try await Self.withHarness { harness in
            // Every answer is a 503 and the policy has no attempt limit: the deadline alone ends the exchange, with
            // the last failure, and no wait would end at or past it (however slow the machine makes each attempt).
            harness.server.script("/x", [Self.unavailable()])
            let waits = Locked<[(start: ContinuousClock.Instant, delay: Duration)]>([])
            let timing = RetryTiming(
                sleep: { delay in
                    waits.withLock { $0.append((.now, delay)) }
                    try await Task.sleep(for: delay)
                },
                jitter: { 1 })
            let policy = RetryPolicy(maxAttempts: .max, initialBackoff: .milliseconds(100), maxBackoff: .milliseconds(300))
            let exchange = RetryingExchange(client: harness.client, retries: policy, maxBodyBytes: 1024, timing: timing)
            let deadline = ContinuousClock.now + .seconds(3)
            // The last failure: a 503, or no answer when a loaded machine held an attempt up to the deadline.
            await #expect(throws: Refused.self) {
                try await exchange.run(
                    HTTPClientRequest(url: "\(harness.server.baseURL)/x"), deadline: deadline, expired: { Refused(status: -1) },
                    classify: Self.classify)
            }
            #expect(waits.value.allSatisfy { $0.start + $0.delay < deadline })
            // One attempt before the first wait and at most one after each: none when a starved machine woke from the
            // last wait (or sent its attempt) only after the deadline.
            let calls = harness.server.calls(to: "/x")
            #expect(calls >= 1 && calls <= waits.value.count + 1, "\(calls) calls, \(waits.value.count) waits")
        }
    }

    /// `epochSeconds` as an IMF-fixdate.
    static func imfFixdate(_ epochSeconds: Int64) -> String {
        let days = epochSeconds / 86_400
        let seconds = epochSeconds % 86_400
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = z / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][Int(days % 7)]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(weekday), \(two(day)) \(months[Int(month - 1)]) \(year) \(two(seconds / 3600)):\(two(seconds / 60 % 60)):\(two(seconds % 60)) GMT"
    }
}
