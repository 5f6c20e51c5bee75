import RESP
import Testing
import TokenGateCore
import TokenGateTesting

/// A caller's distinct-contexts cap holds across three replicas on one real Redis as if there were one gateway:
/// spreading a harvest over the replicas gains nothing, and a context counted at one replica is free at the others.
@Suite(.timeLimit(.minutes(5)))
struct SharedDistinctContextTests {
    @Test func theCapHoldsAcrossThreeReplicasAndACountedTripIsFreeAtEvery() async throws {
        try await ScaleOutFixture.with(rateLimits: "{ distinctContexts: { perCaller: 5/h } }") { _, redis, replicas in
            // Twelve different trips, round robin over the replicas, four at a time: exactly five are handed out.
            let answers = try await withThrowingTaskGroup(of: (String, Int).self) { group in
                for trip in 0..<12 {
                    group.addTask { ("trip-\(trip)", try await replicas[trip % 3].consumerToken("trip-\(trip)").status) }
                }
                return try await group.reduce(into: [String: Int]()) { $0[$1.0] = $1.1 }
            }
            let admitted = answers.filter { $0.value == 200 }.map(\.key).sorted()
            #expect(admitted.count == 5, "\(answers)")
            #expect(answers.values.allSatisfy { $0 == 200 || $0 == 429 }, "\(answers)")
            // Each admitted trip is free at every replica; a new one is refused at every replica.
            for trip in admitted {
                for replica in replicas { #expect(try await replica.consumerToken(trip).status == 200) }
            }
            for replica in replicas {
                let refused = try await replica.consumerToken("trip-new")
                #expect(refused.status == 429)
                let retryAfter = Int(refused.header("Retry-After") ?? "") ?? 0
                #expect((1...3600).contains(retryAfter))
                // Decided in Redis: no replica fell back to counting alone.
                #expect(try await replica.scrape()["tokengate_rate_limit_local_fallback_total", ["provider": "acme-rides"]] == nil)
            }
            // The count is one set in Redis, holding digests, no trip ID in clear.
            let (keys, members) = try await redis.withClient { client in
                let keys = (try await client.send(["KEYS", "tokengate:distinct:*"]).elements ?? []).compactMap(\.string)
                let members = try await client.send(["SMEMBERS", keys.first ?? "none"]).elements?.compactMap(\.string) ?? []
                return (keys, members)
            }
            #expect(keys.count == 1, "\(keys)")
            #expect(members.count == 5)
            #expect(!members.contains { $0.hasPrefix("trip") })
        }
    }
}
