import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// A leaked credential cannot harvest the fleet: `rateLimits.distinctContexts` caps how many different contexts one
/// caller obtains tokens for per window, while asking again for one already counted stays free. Through both doors
/// (the event loop's answer to a cached hit and the router's), in process; across replicas in the scale-out suite.
@Suite struct DistinctContextTests {
    static func trip(_ id: String) -> String { "/v1/providers/acme-rides/tokens/consumer?tripId=\(id)" }
    static func vehicle(_ id: String) -> String { "/v1/providers/acme-rides/tokens/driver?vehicleId=\(id)" }

    @Test func aCallerGetsItsCapOfDistinctTripsPerWindowAndAskingAgainIsFree() async throws {
        let fixture = try GatewayFixture(rateLimits: "{ distinctContexts: { perCaller: 3/h } }")
        let logs = LogRecorder()
        try await fixture.withGateway(logs: logs) { gateway in
            for trip in ["trip-1", "trip-2", "trip-3"] {
                #expect(try await gateway.get(Self.trip(trip), bearer: GatewayFixture.apiKey).status == 200)
            }
            // The fourth trip is refused until the hour's window ends (the manual clock starts on a whole hour).
            let refused = try await gateway.get(Self.trip("trip-4"), bearer: GatewayFixture.apiKey)
            #expect(refused.status == 429)
            #expect(refused.errorCode == "rate_limited")
            #expect(refused.header("Retry-After") == "3600")
            #expect(refused.json["error"]?.objectValue?["message"]?.stringValue == TokenGateError.Code.rateLimited.publicMessage)
            // A trip already counted is free, cached or not, as often as asked; another type counts in the same cap.
            for _ in 0..<5 { #expect(try await gateway.get(Self.trip("trip-2"), bearer: GatewayFixture.apiKey).status == 200) }
            #expect(try await gateway.get(Self.vehicle("v-1"), bearer: GatewayFixture.apiKey).status == 429)
            // Another caller has a cap of its own.
            let rider = try fixture.sessionToken(subject: "rider-9", claims: ["trips": .array([.string("trip-4")])])
            #expect(try await gateway.get(Self.trip("trip-4"), bearer: rider).status == 200)

            let scrape = MetricsTests.Scrape(try await gateway.metrics())
            #expect(scrape["tokengate_rate_limited_total", ["provider": "acme-rides", "scope": "distinct_contexts"]] == 2)
            // Logged in aggregate, naming the caller: one line for the two refusals of this window's first 10 s.
            let lines = logs.all.filter { $0.text.contains("distinct-contexts cap") }
            #expect(lines.count == 1)
            #expect(lines.first?.text.contains("client=dispatch") == true)

            // A new window starts a new count.
            fixture.clock.advance(by: .seconds(3600))
            #expect(try await gateway.get(Self.trip("trip-4"), bearer: GatewayFixture.apiKey).status == 200)
        }
    }

    @Test func aPerTypeCapCountsItsTypeApartAndAShadowCapRefusesNobody() async throws {
        let fixture = try GatewayFixture(rateLimits: "{ distinctContexts: { perCaller: 100/h, perType: { driver: 1/min } } }")
        try await fixture.withGateway { gateway in
            #expect(try await gateway.get(Self.vehicle("v-1"), bearer: GatewayFixture.apiKey).status == 200)
            let refused = try await gateway.get(Self.vehicle("v-2"), bearer: GatewayFixture.apiKey)
            #expect(refused.status == 429)
            #expect(refused.header("Retry-After") == "60")
            for trip in 0..<5 { #expect(try await gateway.get(Self.trip("trip-\(trip)"), bearer: GatewayFixture.apiKey).status == 200) }
        }
        let shadow = try GatewayFixture(rateLimits: "{ distinctContexts: { perCaller: 1/h, shadow: true } }")
        try await shadow.withGateway { gateway in
            for trip in 0..<3 { #expect(try await gateway.get(Self.trip("trip-\(trip)"), bearer: GatewayFixture.apiKey).status == 200) }
            let scrape = MetricsTests.Scrape(try await gateway.metrics())
            #expect(scrape["tokengate_rate_limit_shadow_refusals_total", ["provider": "acme-rides", "scope": "distinct_contexts"]] == 2)
            #expect(scrape["tokengate_rate_limited_total", ["provider": "acme-rides", "scope": "distinct_contexts"]] == 0)
        }
    }
}
