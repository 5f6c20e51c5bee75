import Foundation
import RESP
import Testing
import TokenGateCore
import TokenGateTesting

/// Replicas on a Redis Cluster (three primaries, three replicas, real processes on loopback): one mint per context
/// and limits shared, before and after the primary serving the provider's keys is failed over.
@Suite(.timeLimit(.minutes(3)))
struct ClusterTests {
    @Test func theReplicasShareMintsAndLimitsAcrossAFailover() async throws {
        try await ScaleOutFixture.withCluster(rateLimits: "{ caller: { rate: 1/min, burst: 15 } }") { fixture, cluster, replicas in
            // Every trip asked at every replica: one backend call each.
            for trip in ["trip-1", "trip-2", "trip-3"] {
                for replica in replicas { #expect(try await replica.consumerToken(trip).status == 200) }
            }
            #expect(fixture.totalBackendCalls == 3)

            // The provider's keys share its hash tag, so one slot: fail over the primary serving it.
            let slot = RESPHashSlot.of("{acme-rides}")
            let replicaPort = try await cluster.replicaPort(ofSlot: slot)
            let promoted = try #require(replicaPort.flatMap { cluster.node(port: $0) })
            try await promoted.withClient { _ = try await $0.send(["CLUSTER", "FAILOVER"]) }
            #expect(try await eventually { try await cluster.primaryPort(ofSlot: slot, askingNode: promoted) == promoted.port })
            // A new trip minted at one replica is read by the others, from the new primary (the old one answers MOVED).
            for replica in replicas { #expect(try await replica.consumerToken("trip-after").status == 200) }
            #expect(fixture.totalBackendCalls == 4)
            let keys = try await promoted.withClient { try await $0.send(["KEYS", "*{acme-rides}*"]).elements?.count ?? 0 }
            #expect(keys > 0)

            // The caller's burst of 15 holds across the three replicas (12 used above): 3 more, then refusals.
            var admitted = 0
            for index in 0..<9 where try await replicas[index % 3].consumerToken("trip-1").status == 200 { admitted += 1 }
            #expect(admitted == 3)
        }
    }
}
