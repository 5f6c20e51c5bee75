import Foundation
import Testing
import TokenGateCore
import TokenGateTesting

/// Redis stopped under the replicas. By default (`uncheckedContexts: refuse`) no replica serves a trip whose end it
/// cannot check: every request for one is refused `503 shared_state_unavailable`, cached or not. With
/// `uncheckedContexts: serve`, every request a replica could serve alone is served and limits fall back to each
/// replica's share. Either way, once Redis is back the replicas share again.
@Suite(.timeLimit(.minutes(5)))
struct RedisOutageTests {
    @Test(arguments: [SharedStateSettings.UncheckedContexts.refuse, .serve])
    func redisStoppedMidRunAndTheReplicasShareAgainAfterItsRestart(mode: SharedStateSettings.UncheckedContexts) async throws {
        let logs = LogRecorder()
        try await ScaleOutFixture.with(
            rateLimits: "{ caller: { rate: 60/min, burst: 30 } }", sharedStateExtra: "  uncheckedContexts: \(mode.rawValue)", logs: logs
        ) { fixture, redis, replicas in
            #expect(try await replicas[0].consumerToken("trip-warm").status == 200)
            #expect(try await replicas[1].consumerToken("trip-warm").status == 200)
            let warmCalls = fixture.totalBackendCalls
            #expect(warmCalls == 1)

            await redis.stop()
            switch mode {
            case .refuse:
                // Cached and new trips, at every replica: refused once the replica knows it is no longer told of ends.
                for (index, trip) in ["trip-warm", "trip-new-1", "trip-new-2", "trip-warm", "trip-new-1"].enumerated() {
                    let refused = try await eventually(within: TestTiming.bound(.seconds(5))) {
                        try await replicas[index % 3].consumerToken(trip).errorCode == "shared_state_unavailable"
                    }
                    #expect(refused, "\(trip) at replica \(index % 3)")
                }
                let refusal = try await replicas[0].consumerToken("trip-warm")
                #expect(refusal.status == 503 && refusal.header("Retry-After") == "1")
                #expect(fixture.totalBackendCalls == warmCalls, "nothing was minted unchecked")
            case .serve:
                // Cached and new trips, at every replica: each answered, from its cache or minted on its own.
                for (index, trip) in ["trip-warm", "trip-new-1", "trip-new-2", "trip-warm", "trip-new-1"].enumerated() {
                    let response = try await replicas[index % 3].consumerToken(trip)
                    #expect(response.status == 200, "\(trip) at replica \(index % 3): \(response.status) \(response.errorCode ?? "")")
                }
                // The caller limit is 30 at once over 3 replicas: 10 per replica while they cannot share.
                var admitted = 0
                for _ in 0..<12 where try await replicas[2].consumerToken("trip-warm").status == 200 { admitted += 1 }
                #expect(admitted < 12)
            }
            for replica in replicas {
                let scrape = try await replica.scrape()
                #expect(scrape["tokengate_shared_state_up"] == 0)
                #expect((scrape["tokengate_rate_limit_local_fallback_total", ["provider": "acme-rides"]] ?? 0) > 0)
            }
            #expect(logs.all.contains { $0.text.contains("shared state unreachable") })

            try await redis.start()
            // Each replica leaves a failed store alone for a second (on its clock) before it asks again, and its Redis
            // client a refused server for a backoff (in real time: at most 100 ms after the one failure each made).
            fixture.clock.advance(by: .seconds(2))
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await replicas[0].consumerToken("trip-after").status == 200)
            let before = fixture.totalBackendCalls
            #expect(try await replicas[1].consumerToken("trip-after").status == 200)
            #expect(try await replicas[2].consumerToken("trip-after").status == 200)
            #expect(fixture.totalBackendCalls == before, "replicas 1 and 2 read the token replica 0 stored")
            #expect(logs.all.contains { $0.text.contains("shared state reachable again") })
            #expect(try await replicas[1].scrape()["tokengate_shared_state_up"] == 1)
        }
    }
}
