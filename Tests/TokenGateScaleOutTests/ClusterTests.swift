import Foundation
import RESP
import RESPTesting
import Synchronization
import Testing
import TokenGateCore
import TokenGateTesting

/// Replicas on a Redis Cluster (three primaries, three replicas, real processes on loopback): one mint per context,
/// one provider's contexts spread over the shards, and limits shared, before and after a primary is failed over.
@Suite(.timeLimit(.minutes(3)))
struct ClusterTests {
    @Test func theReplicasShareMintsAndLimitsAcrossAFailover() async throws {
        try await ScaleOutFixture.withCluster(rateLimits: "{ caller: { rate: 1/min, burst: 30 } }") { fixture, cluster, replicas in
            // Every trip asked at every replica: one backend call each.
            let trips = (1...3).map { "trip-\($0)" }
            for trip in trips {
                for replica in replicas { #expect(try await replica.consumerToken(trip).status == 200) }
            }
            #expect(fixture.totalBackendCalls == 3)

            // Each context is a hash tag of its own, so one provider's tokens do not all sit on one shard.
            var tokenKeys: Set<String> = []
            for node in cluster.nodes {
                let keys = try await node.withClient { try await $0.send(["KEYS", "tokengate:token:*"]).elements ?? [] }
                tokenKeys.formUnion(keys.compactMap(\.string))
            }
            #expect(tokenKeys.count == 3)
            var shardsHoldingTokens: Set<Int> = []
            for key in tokenKeys { if let port = try await cluster.primaryPort(ofSlot: RESPHashSlot.of(key)) { shardsHoldingTokens.insert(port) } }
            #expect(shardsHoldingTokens.count >= 2)

            // A request's limits are one script over keys tagged with the provider: fail over the primary serving them.
            let slot = RESPHashSlot.of("{acme-rides}")
            let replicaPort = try await cluster.replicaPort(ofSlot: slot)
            let promoted = try #require(replicaPort.flatMap { cluster.node(port: $0) })
            try await promoted.withClient { _ = try await $0.send(["CLUSTER", "FAILOVER"]) }
            #expect(try await eventually { try await cluster.primaryPort(ofSlot: slot, askingNode: promoted) == promoted.port })
            // New trips minted at one replica are read by the others (the old primary answers MOVED).
            for trip in (4...9).map({ "trip-\($0)" }) {
                for replica in replicas { #expect(try await replica.consumerToken(trip).status == 200) }
            }
            #expect(fixture.totalBackendCalls == 9)

            // The caller's burst of 30 holds across the three replicas (27 used above): 3 more, then refusals.
            var admitted = 0
            for index in 0..<9 where try await replicas[index % 3].consumerToken("trip-1").status == 200 { admitted += 1 }
            #expect(admitted == 3)

            // An end deletes the context's token from the shard that holds it.
            let ended = try await replicas[0].adminRequest("POST", "/admin/v1/providers/acme-rides/contexts/consumer/trip-2/end")
            #expect(ended.status == 200)
            #expect(
                try await eventually {
                    var keys: Set<String> = []
                    for node in cluster.nodes {
                        keys.formUnion(
                            try await node.withClient { try await $0.send(["KEYS", "tokengate:token:*"]).elements ?? [] }.compactMap(\.string))
                    }
                    return keys.count == 8
                })
        }
    }

    /// The slot of the provider's limit buckets, which every request charges, moved to another primary while three
    /// replicas serve: every request answered from the shared store (never locally), one mint per trip throughout.
    @Test func aSlotMigratedUnderLoadLosesNothing() async throws {
        try await ScaleOutFixture.withCluster(rateLimits: "{ caller: { rate: 100000/min, burst: 100000 } }") { fixture, cluster, replicas in
            #expect(try await replicas[0].consumerToken("trip-0").status == 200)
            let slot = RESPHashSlot.of("{acme-rides}")
            let source = try #require(try await cluster.primaryPort(ofSlot: slot))
            let destination = try #require(try await cluster.primaries().first { $0.port != source })

            let migrated = MigrationFlag()
            let trips = try await withThrowingTaskGroup(of: [Int].self) { group in
                for replica in replicas {
                    group.addTask {
                        // The same trips in order at each replica, until 20 after the migration (500 at most).
                        var (statuses, after) = ([Int](), 0)
                        for trip in 1...500 where after < 20 {
                            statuses.append(try await replica.consumerToken("trip-\(trip)").status)
                            if migrated.isDone.load(ordering: .relaxed) { after += 1 }
                        }
                        return statuses
                    }
                }
                try await cluster.migrate(slot: slot, to: destination, pause: .milliseconds(300))
                migrated.isDone.store(true, ordering: .relaxed)
                return try await group.reduce(into: [[Int]]()) { $0.append($1) }
            }
            #expect(try await cluster.primaryPort(ofSlot: slot) == destination.port)
            #expect(trips.allSatisfy { $0.allSatisfy { $0 == 200 } })
            let asked = trips.map(\.count).max() ?? 0
            #expect(fixture.totalBackendCalls == asked + 1)
            for replica in replicas {
                let scrape = try await replica.scrape()
                #expect(scrape["tokengate_rate_limit_local_fallback_total", ["provider": "acme-rides"]] == nil)
                #expect(scrape["tokengate_shared_state_up"] == 1)
            }
        }
    }
}

/// Whether the migration is over, as the load's tasks see it.
private final class MigrationFlag: Sendable {
    let isDone = Atomic(false)
}
