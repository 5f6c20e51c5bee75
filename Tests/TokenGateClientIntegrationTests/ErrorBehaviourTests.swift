import Foundation
import Testing
import TokenGateClient
import TokenGateTesting

/// How the client reacts to the gateway's refusals and failures: 401/403 at once, 429 per Retry-After, 5xx with
/// bounded retries. Waits go through the shared ManualClock, so they are instant and recorded.
@Suite(.timeLimit(.minutes(5))) struct ErrorBehaviourTests {
    @Test func anUnknownKeyIsUnauthenticatedWithoutRetry() async throws {
        let fixture = try ClientGatewayFixture()
        try await fixture.withGateway { gateway in
            let client = try fixture.client(of: gateway, key: ClientGatewayFixture.unknownKey)
            let error = try await #require(throws: TokenGateClientError.self) {
                try await client.provider.token(for: .trip("trip-42"))
            }
            #expect(error.code == .unauthenticated)
            #expect(error.status == 401)
            #expect(error.serverCode == "unauthenticated")
            #expect(client.transport.requestCount == 1)
            #expect(client.clock.sleeps.isEmpty)
            #expect(fixture.probe.calls == 0)
            #expect(await client.provider.cachedContexts.isEmpty)
        }
    }

    @Test func anotherTenantsKeyIsForbiddenWithoutRetry() async throws {
        let fixture = try ClientGatewayFixture()
        try await fixture.withGateway { gateway in
            let client = try fixture.client(of: gateway, key: ClientGatewayFixture.otherTenantKey)
            let error = try await #require(throws: TokenGateClientError.self) {
                try await client.provider.token(for: .trip("trip-42"))
            }
            #expect(error.code == .forbidden)
            #expect(error.status == 403)
            #expect(client.transport.requestCount == 1)
            #expect(client.clock.sleeps.isEmpty)
            #expect(fixture.probe.calls == 0)
        }
    }

    @Test func aTokenTypeTheKeyIsNotAllowedIsForbiddenWithoutRetry() async throws {
        let fixture = try ClientGatewayFixture()
        try await fixture.withGateway { gateway in
            let client = try fixture.client(of: gateway, key: ClientGatewayFixture.riderOnlyKey)
            #expect(try await client.provider.token(for: .trip("trip-42")).isEmpty == false)
            let error = try await #require(throws: TokenGateClientError.self) {
                try await client.provider.token(for: .vehicle("vehicle-7"))
            }
            #expect(error.code == .forbidden)
            #expect(error.serverCode == "forbidden")
            #expect(client.transport.requestCount == 2)
            #expect(client.clock.sleeps.isEmpty)
            #expect(fixture.probe.calls == 1)
        }
    }

    @Test func aRetryAfterLongerThanThePolicyAllowsSurfacesAsRateLimitedAtOnce() async throws {
        let fixture = try ClientGatewayFixture(rateLimits: "{ context: { rate: 1/min, burst: 1 } }")
        try await fixture.withGateway { gateway in
            _ = try await fixture.client(of: gateway).provider.token(for: .trip("trip-42"))
            // Another device asks for the same trip within the minute; the default policy waits at most 30 s.
            let client = try fixture.client(of: gateway)
            let error = try await #require(throws: TokenGateClientError.self) {
                try await client.provider.token(for: .trip("trip-42"))
            }
            #expect(error.code == .rateLimited)
            #expect(error.status == 429)
            #expect(error.retryAfter == 60)
            #expect(client.transport.requestCount == 1)
            #expect(client.clock.sleeps.isEmpty)
        }
    }

    @Test func waitsOutAnAcceptableRetryAfterOnTheInjectedClockThenSucceeds() async throws {
        let fixture = try ClientGatewayFixture(rateLimits: "{ context: { rate: 1/min, burst: 1 } }")
        try await fixture.withGateway { gateway in
            let first = try await fixture.client(of: gateway).provider.token(for: .trip("trip-42"))
            let started = fixture.clock.now
            let client = try fixture.client(of: gateway, retryPolicy: RetryPolicy(maximumRetryAfter: 120))
            let token = try await client.provider.token(for: .trip("trip-42"))
            #expect(token == first)  // the gateway's cached token, a minute older
            #expect(client.clock.sleeps == [60])
            #expect(fixture.clock.now == started + 60)
            #expect(client.transport.requestCount == 2)
            #expect(fixture.probe.calls == 1)
        }
    }

    @Test func retriesABackendOutageAndSucceeds() async throws {
        let fixture = try ClientGatewayFixture()
        try await fixture.withGateway { gateway in
            fixture.probe.failNext(1)
            let client = try fixture.client(
                of: gateway, retryPolicy: RetryPolicy(maximumAttempts: 3, initialDelay: 1, jitter: 0))
            let token = try await client.provider.token(for: .trip("trip-42"))
            #expect(ClientGatewayFixture.tripClaim(of: token) == "trip-42")
            #expect(client.transport.requestCount == 2)
            #expect(client.clock.sleeps == [1])
            #expect(fixture.probe.calls == 2)
        }
    }

    @Test func givesUpAfterBoundedAttemptsWhenTheBackendStaysDown() async throws {
        let fixture = try ClientGatewayFixture()
        try await fixture.withGateway { gateway in
            fixture.probe.failAlways()
            let client = try fixture.client(
                of: gateway, retryPolicy: RetryPolicy(maximumAttempts: 4, initialDelay: 0.5, jitter: 0))
            let error = try await #require(throws: TokenGateClientError.self) {
                try await client.provider.token(for: .trip("trip-42"))
            }
            #expect(error.code == .backendUnavailable)
            #expect(error.status == 503)
            #expect(error.serverCode == "backend_unavailable")
            #expect(client.transport.requestCount == 4)
            #expect(client.clock.sleeps == [0.5, 1, 2])
            #expect(fixture.probe.calls == 4)
            #expect(await client.provider.cachedContexts.isEmpty)

            // The outage ends: the next call fetches afresh (the failure was not cached on either side).
            fixture.probe.failNext(0)
            #expect(try await client.provider.token(for: .trip("trip-42")).isEmpty == false)
            #expect(client.transport.requestCount == 5)
        }
    }
}
