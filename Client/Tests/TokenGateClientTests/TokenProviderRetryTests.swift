import Foundation
import Testing
import TokenGateClient

@Suite struct TokenProviderRetryTests {
    let trip = TokenContext.trip("trip-42")

    private func failure(
        _ provider: TokenProvider, _ context: TokenContext = .trip("trip-42")
    ) async throws -> TokenGateClientError {
        let error = await #expect(throws: TokenGateClientError.self) { try await provider.token(for: context) }
        return try #require(error)
    }

    @Test func unauthenticatedWithAnUnchangedCredentialIsSurfacedAtOnceAndSaysReauthenticate() async throws {
        let clock = ManualClock()
        let transport = TestTransport { _, _ in
            Fixtures.errorResponse(
                401, code: "unauthenticated", headers: ["WWW-Authenticate": #"Bearer realm="tokengate""#])
        }
        let asked = Counter()
        let provider = TokenProvider(configuration: Fixtures.configuration(), transport: transport, clock: clock) {
            asked.increment()
            return "s3cret-session"
        }
        let error = try await failure(provider)
        #expect(asked.value == 2)  // asked again after the 401: the same credential is not sent again
        #expect(error.code == .unauthenticated)
        #expect(error.status == 401)
        #expect(error.serverCode == "unauthenticated")
        #expect(error.description.contains("re-authenticate"))
        #expect(!error.description.contains("s3cret"))
        #expect(transport.count == 1)
        #expect(clock.sleeps.isEmpty)
    }

    @Test func a401IsRetriedOnceAtOnceWhenTheCredentialSourceGivesAnotherCredential() async throws {
        let clock = ManualClock()
        let transport = TestTransport { _, request in
            request.headers["Authorization"] == "Bearer renewed-session"
                ? Fixtures.tokenGateBody("token-1", now: clock.now) : Fixtures.errorResponse(401, code: "unauthenticated")
        }
        let asked = Counter()
        let provider = TokenProvider(configuration: Fixtures.configuration(), transport: transport, clock: clock) {
            asked.increment() == 1 ? "expired-session" : "renewed-session"
        }
        #expect(try await provider.token(for: trip) == "token-1")
        #expect(transport.requests.map { $0.headers["Authorization"] } == ["Bearer expired-session", "Bearer renewed-session"])
        #expect(clock.sleeps.isEmpty)
    }

    @Test func a401IsRetriedOnlyOnceEvenWhenTheCredentialKeepsChanging() async throws {
        let clock = ManualClock()
        let transport = TestTransport { _, _ in Fixtures.errorResponse(401, code: "unauthenticated") }
        let asked = Counter()
        let provider = TokenProvider(configuration: Fixtures.configuration(), transport: transport, clock: clock) {
            "session-\(asked.increment())"
        }
        #expect(try await failure(provider).code == .unauthenticated)
        #expect(transport.count == 2)
    }

    @Test func forbiddenIsSurfacedAtOnce() async throws {
        let clock = ManualClock()
        let transport = TestTransport { _, _ in Fixtures.errorResponse(403, code: "forbidden") }
        let error = try await failure(Fixtures.provider(transport, clock: clock))
        #expect(error.code == .forbidden)
        #expect(error.description.contains("not allowed"))
        #expect(transport.count == 1)
        #expect(clock.sleeps.isEmpty)
    }

    @Test(arguments: [
        (400, "invalid_request", TokenGateClientError.Code.invalidRequest),
        (404, "unknown_provider", .notFound),
        (404, "unknown_token_type", .notFound),
        (404, "no_token_for_context", .noTokenForContext),
        (410, "context_ended", .contextEnded),
        (302, "", .invalidResponse),
    ])
    func clientErrorsAreNotRetried(status: Int, serverCode: String, code: TokenGateClientError.Code) async throws {
        let clock = ManualClock()
        let transport = TestTransport { _, _ in Fixtures.errorResponse(status, code: serverCode) }
        let error = try await failure(Fixtures.provider(transport, clock: clock))
        #expect(error.code == code)
        #expect(transport.count == 1)
    }

    @Test func noTokenForContextIsItsOwnCodeAndIsNotRetried() async throws {
        let clock = ManualClock()
        let transport = TestTransport { _, _ in Fixtures.errorResponse(404, code: "no_token_for_context") }
        let policy = RetryPolicy(maximumAttempts: 10, jitter: 0)
        let error = try await failure(Fixtures.provider(transport, clock: clock, retryPolicy: policy))
        #expect(error.code == .noTokenForContext)
        #expect(error.code != .notFound)
        #expect(error.status == 404)
        #expect(error.serverCode == "no_token_for_context")
        #expect(!error.isRetryable)
        #expect(error.description.contains("no token for this context"))
        #expect(transport.count == 1)
        #expect(clock.sleeps.isEmpty)
    }

    @Test func a404WithoutAKnownCodeIsNotFound() async throws {
        let clock = ManualClock()
        let transport = TestTransport { _, _ in
            HTTPTransportResponse(status: 404, body: Data("<html>Not Found</html>".utf8))
        }
        let error = try await failure(Fixtures.provider(transport, clock: clock))
        #expect(error.code == .notFound)
        #expect(error.serverCode == nil)
        #expect(transport.count == 1)
    }

    @Test func rateLimitedWaitsExactlyRetryAfterThenSucceeds() async throws {
        let clock = ManualClock()
        let transport = TestTransport { index, _ in
            index == 0
                ? Fixtures.errorResponse(429, code: "rate_limited", headers: ["retry-after": "5"])
                : Fixtures.tokenGateBody("token-1", now: clock.now)
        }
        // The default policy's longest wait, 5 s, exactly; jitter never applies to a Retry-After.
        let provider = Fixtures.provider(transport, clock: clock, retryPolicy: RetryPolicy(jitter: 1))
        #expect(try await provider.token(for: trip) == "token-1")
        #expect(clock.sleeps == [5])
        #expect(transport.count == 2)
    }

    @Test(arguments: ["6", "120"])
    func rateLimitedBeyondTheLongestWaitFailsFastWithRetryAfter(retryAfter: String) async throws {
        let clock = ManualClock()
        let transport = TestTransport { _, _ in
            Fixtures.errorResponse(429, code: "rate_limited", headers: ["Retry-After": retryAfter])
        }
        let error = try await failure(Fixtures.provider(transport, clock: clock))
        #expect(error.code == .rateLimited)
        #expect(error.retryAfter == TimeInterval(retryAfter))
        #expect(transport.count == 1)
        #expect(clock.sleeps.isEmpty)
    }

    @Test func serverErrorsAreRetriedWithExponentialBackoffThenSucceed() async throws {
        let clock = ManualClock()
        let transport = TestTransport { index, _ in
            switch index {
            case 0: Fixtures.errorResponse(503, code: "backend_unavailable")
            case 1: HTTPTransportResponse(status: 502, body: Data("<html>bad gateway</html>".utf8))
            default: Fixtures.tokenGateBody("token-1", now: clock.now)
            }
        }
        let provider = Fixtures.provider(transport, clock: clock)  // the default 3 attempts
        #expect(try await provider.token(for: trip) == "token-1")
        #expect(clock.sleeps == [0.5, 1])
        #expect(transport.count == 3)
    }

    @Test func aServerErrorWithAShortRetryAfterWaitsExactlyThat() async throws {
        let clock = ManualClock()
        let transport = TestTransport { index, _ in
            index == 0
                ? Fixtures.errorResponse(503, code: "backend_unavailable", headers: ["Retry-After": "2"])
                : Fixtures.tokenGateBody("token-1", now: clock.now)
        }
        #expect(try await Fixtures.provider(transport, clock: clock).token(for: trip) == "token-1")
        #expect(clock.sleeps == [2])
    }

    @Test func retriesAreBoundedAndTheLastErrorSurfaces() async throws {
        let clock = ManualClock()
        let transport = TestTransport { _, _ in Fixtures.errorResponse(503, code: "backend_unavailable") }
        let policy = RetryPolicy(maximumAttempts: 3, jitter: 0)
        let error = try await failure(Fixtures.provider(transport, clock: clock, retryPolicy: policy))
        #expect(error.code == .backendUnavailable)
        #expect(error.serverCode == "backend_unavailable")
        #expect(transport.count == 3)
        #expect(clock.sleeps == [0.5, 1])
    }

    @Test func networkErrorsAreRetriedThenSucceed() async throws {
        let clock = ManualClock()
        let transport = TestTransport { index, _ in
            if index < 2 { throw NetworkDown() }
            return Fixtures.tokenGateBody("token-1", now: clock.now)
        }
        let provider = Fixtures.provider(transport, clock: clock)
        #expect(try await provider.token(for: trip) == "token-1")
        #expect(transport.count == 3)
    }

    @Test func aTimeoutIsANetworkErrorAndIsRetried() async throws {
        let clock = ManualClock()
        // What URLSession throws when `URLSessionTransport`'s timeout passes without data.
        let transport = TestTransport { _, _ in throw URLError(.timedOut) }
        let error = try await failure(Fixtures.provider(transport, clock: clock))
        #expect(error.code == .network)
        #expect((error.underlying as? URLError)?.code == .timedOut)
        #expect(transport.count == 3)
    }

    @Test func networkErrorAfterLastAttemptIsTypedNetwork() async throws {
        let clock = ManualClock()
        let transport = TestTransport { _, _ in throw NetworkDown() }
        let error = try await failure(Fixtures.provider(transport, clock: clock))
        #expect(error.code == .network)
        #expect(error.underlying is NetworkDown)
        #expect(transport.count == RetryPolicy.default.maximumAttempts)
    }

    @Test(arguments: [(1, 0.5), (2, 1), (3, 2), (4, 4), (5, 8), (9, 8)])
    func backoffDoublesUpToTheCap(retry: Int, expected: TimeInterval) {
        let policy = RetryPolicy(jitter: 0.5)
        #expect(policy.delay(beforeRetry: retry, random: 0) == expected)
        #expect(policy.delay(beforeRetry: retry, random: 0.999) > expected / 2)
        #expect(policy.delay(beforeRetry: retry, random: 0.999) <= expected)
    }

    @Test func failingCredentialSourceSendsNothing() async throws {
        struct SignedOut: Error {}
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        let provider = TokenProvider(configuration: Fixtures.configuration(), transport: transport, clock: clock) {
            throw SignedOut()
        }
        let error = try await failure(provider)
        #expect(error.code == .credentialUnavailable)
        #expect(transport.count == 0)
    }
}
