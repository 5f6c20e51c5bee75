import Foundation
import Testing
import TokenGateCore
import TokenGateTesting

/// Ending a trip at one replica's admin API reaches every replica.
@Suite(.timeLimit(.minutes(5)))
struct EndedContextReplicationTests {
    @Test func aTripEndedAtOneReplicaIsRefusedAndEvictedAtEveryReplicaWithinASecond() async throws {
        try await ScaleOutFixture.with { fixture, _, replicas in
            for replica in replicas { #expect(try await replica.consumerToken("trip-done").status == 200) }
            let ended = try await replicas[0].adminRequest("POST", "/admin/v1/providers/acme-rides/contexts/consumer/trip-done/end")
            #expect(ended.status == 200)
            // Within a second (longer under a sanitizer: TestTiming); docs/operations.md says milliseconds.
            let started = ContinuousClock.now
            for replica in replicas[1...] {
                #expect(try await eventually(within: TestTiming.bound(.seconds(1)), every: .milliseconds(10)) {
                    try await replica.consumerToken("trip-done").errorCode == "context_ended"
                })
            }
            #expect(ContinuousClock.now - started < TestTiming.bound(.seconds(2)))
            // Ended first, evicted second (a request between the two is refused before the cache): the eviction may
            // trail the first refusal a moment, most under a sanitizer.
            let cache = replicas[1].service.generation.providers[ProviderID("acme-rides")!]!
            #expect(try await eventually(within: TestTiming.bound(.seconds(1)), every: .milliseconds(10)) { cache.cachedTokenCount == 0 })

            // Lifted at another replica: served everywhere again.
            let lifted = try await replicas[2].adminRequest("DELETE", "/admin/v1/providers/acme-rides/contexts/consumer/trip-done/end")
            #expect(lifted.status == 200)
            for replica in replicas {
                #expect(try await eventually(within: TestTiming.bound(.seconds(1)), every: .milliseconds(10)) {
                    try await replica.consumerToken("trip-done").status == 200
                })
            }
        }
    }

    @Test func aReplicaStartedLaterCatchesUpFromTheStoredList() async throws {
        try await ScaleOutFixture.with(replicas: 1) { fixture, redis, replicas in
            let ended = try await replicas[0].adminRequest("POST", "/admin/v1/providers/acme-rides/contexts/driver/van-9/end")
            #expect(ended.status == 200)
            // A second replica, started after the message went out, learns it from the list at its first resync.
            try await RunningGateway.with(
                configuration: fixture.configPath, registry: BackendRegistry([ProbedFactory(probe: BackendProbe())]),
                clock: fixture.clock.gatewayClock
            ) { late in
                let refused = try await eventually(within: TestTiming.bound(.seconds(2))) {
                    let answer = try await late.get("/v1/providers/acme-rides/tokens/driver?vehicleId=van-9", bearer: ScaleOutFixture.apiKey)
                    return answer.errorCode == "context_ended"
                }
                #expect(refused)
            }
            _ = redis
        }
    }
}

extension RunningGateway {
    /// `method` on the admin listener with the fixture's admin key.
    func adminRequest(_ method: String, _ path: String) async throws -> GatewayResponse {
        try await Endpoint(baseURL: adminURL).request(method, path, bearer: ScaleOutFixture.adminKey)
    }
}
