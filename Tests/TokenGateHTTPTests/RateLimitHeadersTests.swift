import Testing
import TokenGateCore
import TokenGateTesting

/// Token answers say which limits they were charged to and how much of the tightest is left (the `RateLimit-Policy`
/// and `RateLimit` fields of draft-ietf-httpapi-ratelimit-headers), so a client can slow down before a 429; a limit
/// in `shadow` mode refuses nobody, and what it would have refused is counted and logged. Through both doors: the
/// event loop's answer to a cached hit and the router's.
@Suite struct RateLimitHeadersTests {
    static let trip = "/v1/providers/acme-rides/tokens/consumer?tripId=trip-42"

    @Test func answersStateTheEnforcedLimitsAndTheTightestOnesRemainder() async throws {
        let fixture = try GatewayFixture(rateLimits: "{ caller: { rate: 600/min, burst: 10 }, context: { rate: 60/min, burst: 2 } }")
        try await fixture.withGateway { gateway in
            let policy = #""caller";q=600;w=60, "context";q=60;w=60"#
            // The trip's bucket holds two: one left after the first (full again in a second), none after the second.
            let first = try await gateway.get(Self.trip, bearer: GatewayFixture.apiKey)
            #expect(first.status == 200)
            #expect(first.header("RateLimit-Policy") == policy)
            #expect(first.header("RateLimit") == #""context";r=1;t=1"#)
            let second = try await gateway.get(Self.trip, bearer: GatewayFixture.apiKey)
            #expect(second.status == 200)
            #expect(second.header("RateLimit") == #""context";r=0;t=2"#)
            let refused = try await gateway.get(Self.trip, bearer: GatewayFixture.apiKey)
            #expect(refused.status == 429 && refused.errorCode == "rate_limited")
            #expect(refused.header("Retry-After") == "1")
            #expect(refused.header("RateLimit-Policy") == policy)
            #expect(refused.header("RateLimit") == #""context";r=0;t=2"#)
            // Another trip has a bucket of its own, still tighter than the caller's (four of ten taken).
            let other = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-43", bearer: GatewayFixture.apiKey)
            #expect(other.header("RateLimit") == #""context";r=1;t=1"#)
            fixture.clock.advance(by: .seconds(2))
            #expect(try await gateway.get(Self.trip, bearer: GatewayFixture.apiKey).header("RateLimit") == #""context";r=1;t=1"#)
        }
    }

    @Test func withoutEnforcedLimitsNoRateLimitFieldIsSent() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let answer = try await gateway.get(Self.trip, bearer: GatewayFixture.apiKey)
            #expect(answer.status == 200)
            #expect(answer.header("RateLimit-Policy") == nil && answer.header("RateLimit") == nil)
        }
    }

    @Test func aShadowLimitRefusesNobodyAndCountsAndLogsWhatItWouldHaveRefused() async throws {
        let fixture = try GatewayFixture(
            rateLimits: "{ caller: { rate: 600/min, burst: 10 }, context: { rate: 60/min, burst: 1, shadow: true } }")
        let logs = LogRecorder()
        try await fixture.withGateway(logs: logs) { gateway in
            for _ in 0..<4 {
                let answer = try await gateway.get(Self.trip, bearer: GatewayFixture.apiKey)
                #expect(answer.status == 200)
                // Only the enforced limit is advertised.
                #expect(answer.header("RateLimit-Policy") == #""caller";q=600;w=60"#)
            }
            let scrape = MetricsTests.Scrape(try await gateway.metrics())
            #expect(scrape["tokengate_rate_limit_shadow_refusals_total", ["provider": "acme-rides", "scope": "context"]] == 3)
            #expect(scrape["tokengate_rate_limited_total", ["provider": "acme-rides", "scope": "context"]] == 0)
            // The first refusal is logged at once; the next ones within ten seconds only counted.
            let lines = logs.all.filter { $0.text.contains("a shadow rate limit would have refused requests") }
            #expect(lines.count == 1)
        }
    }
}
