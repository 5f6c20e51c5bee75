import Foundation
import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// `/metrics` on the admin listener counts what the gateway did, per provider and token type, exactly.
@Suite(.timeLimit(.minutes(5))) struct MetricsTests {
    typealias Scrape = MetricsScrape

    @Test func aScriptedSequenceShowsExactlyTheExpectedCountsPerProviderAndType() async throws {
        // Three requests per trip, then the context limit answers 429.
        let fixture = try GatewayFixture(rateLimits: "{ context: { rate: 1/h, burst: 3 } }")
        try await fixture.withGateway { gateway in
            let consumer = "/v1/providers/acme-rides/tokens/consumer"
            let driver = "/v1/providers/acme-rides/tokens/driver"
            let key = GatewayFixture.apiKey
            #expect(try await gateway.get("\(consumer)?tripId=trip-1", bearer: key).status == 200)  // miss
            #expect(try await gateway.get("\(consumer)?tripId=trip-1", bearer: key).status == 200)  // hit
            #expect(try await gateway.get("\(consumer)?tripId=trip-1", bearer: key).status == 200)  // hit
            #expect(try await gateway.get("\(consumer)?tripId=trip-1", bearer: key).status == 429)  // context limit
            #expect(try await gateway.get("\(driver)?vehicleId=vehicle-1", bearer: key).status == 200)  // miss
            #expect(try await gateway.get("\(consumer)?tripId=trip-1").status == 401)
            #expect(try await gateway.get("\(consumer)?tripId=trip-1", bearer: "not-a-known-key-0123456789").status == 401)
            #expect(try await gateway.get("\(consumer)?tripId=trip-1", bearer: GatewayFixture.otherTenantKey).status == 403)
            #expect(try await gateway.get("/v1/providers/no-such-fleet/tokens/consumer?tripId=trip-1", bearer: key).status == 404)
            fixture.probe.failNext(1)
            #expect(try await gateway.get("\(consumer)?tripId=trip-2", bearer: key).status == 503)  // backend failure
            fixture.probe.misbehave(true)
            #expect(try await gateway.get("\(consumer)?tripId=trip-3", bearer: key).status == 502)  // rejected token
            fixture.probe.misbehave(false)

            let scrape = Scrape(try await gateway.metrics())
            func acme(_ type: String, _ extra: [String: String]) -> [String: String] {
                extra.merging(["provider": "acme-rides", "token_type": type]) { a, _ in a }
            }
            #expect(scrape["tokengate_tokens_served_total", acme("consumer", ["cache": "miss"])] == 1)
            #expect(scrape["tokengate_tokens_served_total", acme("consumer", ["cache": "hit"])] == 2)
            #expect(scrape["tokengate_tokens_served_total", acme("consumer", ["cache": "refresh_ahead"])] == 0)
            #expect(scrape["tokengate_tokens_served_total", acme("driver", ["cache": "miss"])] == 1)
            #expect(scrape["tokengate_tokens_served_total", acme("driver", ["cache": "hit"])] == 0)
            #expect(scrape["tokengate_denials_total", acme("consumer", ["code": "rate_limited"])] == 1)
            #expect(scrape["tokengate_denials_total", acme("consumer", ["code": "unauthenticated"])] == 2)
            #expect(scrape["tokengate_denials_total", acme("consumer", ["code": "forbidden"])] == 1)
            #expect(scrape["tokengate_denials_total", acme("consumer", ["code": "backend_unavailable"])] == 1)
            #expect(scrape["tokengate_denials_total", acme("consumer", ["code": "backend_invalid_token"])] == 1)
            // An unconfigured provider never becomes a label value.
            #expect(scrape["tokengate_denials_total", ["provider": "", "token_type": "consumer", "code": "unknown_provider"]] == 1)
            #expect(!scrape.samples.keys.contains { $0.contains("no-such-fleet") || $0.contains("trip-") || $0.contains("vehicle-1") })
            // Backend calls: trip-1, trip-2 (failed), trip-3 (rejected); vehicle-1.
            #expect(scrape["tokengate_backend_calls_total", acme("consumer", [:])] == 3)
            #expect(scrape["tokengate_backend_calls_total", acme("driver", [:])] == 1)
            #expect(scrape["tokengate_backend_call_duration_seconds_count", acme("consumer", [:])] == 3)
            #expect(scrape["tokengate_backend_failures_total", acme("consumer", ["code": "backend_unavailable"])] == 1)
            #expect(scrape["tokengate_tokens_rejected_total", acme("consumer", ["reason": "wrong_context"])] == 1)
            #expect(scrape["tokengate_rate_limited_total", ["provider": "acme-rides", "scope": "context"]] == 1)
            #expect(scrape["tokengate_rate_limited_total", ["provider": "acme-rides", "scope": "caller"]] == 0)
            #expect(scrape["tokengate_cache_entries", ["provider": "acme-rides"]] == 2)
            #expect(scrape["tokengate_cache_entries", ["provider": "other-fleet"]] == 0)
            #expect(scrape["tokengate_config_generation"] == 1)
            #expect((scrape["process_resident_memory_bytes"] ?? 0) > 1_000_000)
            #expect((scrape["process_open_fds"] ?? 0) > 0)
            #expect((scrape["process_start_time_seconds"] ?? 0) > 1_700_000_000)

            // The public port never exposes them.
            let publicScrape = try await gateway.get("/metrics")
            #expect(publicScrape.status == 404)
            #expect(publicScrape.errorCode == "not_found")
        }
    }

    @Test func reloadsAndTheGenerationAreCounted() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            try await gateway.reloader.reload(trigger: "test")
            try fixture.rewriteConfig { _ in "providers: [\n" }
            await #expect(throws: (any Error).self) { try await gateway.reloader.reload(trigger: "test") }
            let scrape = Scrape(try await gateway.metrics())
            #expect(scrape["tokengate_config_reloads_total", ["outcome": "success"]] == 1)
            #expect(scrape["tokengate_config_reloads_total", ["outcome": "failure"]] == 1)
            #expect(scrape["tokengate_config_generation"] == 2)
        }
    }

    @Test func theAdminListenerAnswersHealthAndReadinessButNoTokens() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
            #expect(try await admin.get("/healthz").status == 200)
            let ready = try await admin.get("/readyz")
            #expect(ready.status == 200)
            #expect(ready.json["generation"] == .integer(1))
            let token = try await admin.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-1", bearer: GatewayFixture.apiKey)
            #expect(token.status == 404)
        }
    }
}
