import NIOCore
import RESP
import RESPTesting
import Testing

/// Redis Cluster: the hash slot of a key, commands sent to the node serving it, and a slot's move (a migration, a
/// failover) followed through `ASK` and `MOVED`. Against a real cluster of three primaries and three replicas.
@Suite(.timeLimit(.minutes(3)))
struct ClusterTests {
    @Test func theHashSlotIsCRC16OfTheKeyOrItsTag() {
        #expect(RESPHashSlot.of("123456789") == 0x31C3)  // CRC16/XMODEM's check value
        #expect(RESPHashSlot.of("a:{trip-1}:x") == RESPHashSlot.of("trip-1"))
        #expect(RESPHashSlot.of("{}:x") == RESPHashSlot.of("{}:x"))
        #expect(RESPHashSlot.of("a{}b") != RESPHashSlot.of(""))  // an empty tag is no tag: the whole key counts
    }

    @Test func keysGoToTheNodeServingTheirSlotAsTheServerComputesIt() async throws {
        try await RedisClusterGroup.with { cluster in
            let client = RESPClusterClient(seeds: [cluster.addresses[0]], configuration: cluster.nodes[0].configuration())
            for index in 0..<60 { try await client.set("key-\(index)", to: "value-\(index)") }
            for index in 0..<60 { #expect(try await client.get("key-\(index)") == ByteBuffer(string: "value-\(index)")) }
            // The server's own slot for each key is ours, and the keys spread over the three primaries.
            var primariesWithKeys: Set<Int> = []
            for index in 0..<60 {
                let slot = try await cluster.nodes[0].withClient { try await $0.send(["CLUSTER", "KEYSLOT", "key-\(index)"]).integer }
                #expect(slot.map(Int.init) == RESPHashSlot.of("key-\(index)"))
                if let port = try await cluster.primaryPort(ofSlot: RESPHashSlot.of("key-\(index)")) { primariesWithKeys.insert(port) }
            }
            #expect(primariesWithKeys.count == 3)
            await client.shutdown()
        }
    }

    /// A slot moved from one primary to another while the client holds the old map: mid-migration the moved key is
    /// answered through `ASK` (a command over keys on both sides is retried, then fails with `TRYAGAIN`), afterwards
    /// through `MOVED`.
    @Test func aMigratingSlotIsFollowedThroughAskThenMoved() async throws {
        try await RedisClusterGroup.with { cluster in
            let client = RESPClusterClient(seeds: [cluster.addresses[0]], configuration: cluster.nodes[0].configuration())
            let key = "{moving}:token"
            let slot = RESPHashSlot.of(key)
            let other = "{moving}:lock"
            try await client.set(key, to: "sealed")
            try await client.set(other, to: "staying")
            let sourcePort = try #require(try await cluster.primaryPort(ofSlot: slot))
            let source = try #require(cluster.node(port: sourcePort))
            let target = try #require(cluster.nodes.prefix(3).first { $0.port != sourcePort })
            let (sourceID, targetID) = (try await RedisClusterGroup.id(of: source), try await RedisClusterGroup.id(of: target))

            try await target.withClient { _ = try await $0.send(["CLUSTER", "SETSLOT", String(slot), "IMPORTING", sourceID]) }
            try await source.withClient { node in
                _ = try await node.send(["CLUSTER", "SETSLOT", String(slot), "MIGRATING", targetID])
                _ = try await node.send(["MIGRATE", "127.0.0.1", String(target.port), "", "0", "5000", "KEYS", key])
            }
            // The key has left the source, which answers ASK.
            #expect(try await client.get(key) == ByteBuffer(string: "sealed"))
            // A command over that key and one still at the source is split for now: retried 5 times, 20 ms apart, then
            // the server's TRYAGAIN; once the other key has moved too, it is answered (through ASK).
            let started = ContinuousClock.now
            let split = await #expect(throws: RESPError.self) { try await client.send(["MGET", key, other]) }
            #expect(split?.serverCode == "TRYAGAIN")
            #expect(ContinuousClock.now - started >= .milliseconds(100))
            try await source.withClient { _ = try await $0.send(["MIGRATE", "127.0.0.1", String(target.port), "", "0", "5000", "KEYS", other]) }
            #expect(try await client.send(["MGET", key, other]).elements?.compactMap(\.string) == ["sealed", "staying"])

            for node in cluster.nodes.prefix(3) {
                try await node.withClient { _ = try await $0.send(["CLUSTER", "SETSLOT", String(slot), "NODE", targetID]) }
            }
            // The source now answers MOVED.
            #expect(try await client.get(key) == ByteBuffer(string: "sealed"))
            try await client.set(key, to: "resealed")
            let atTarget = try await target.withClient { try await $0.get(key) }
            #expect(atTarget == ByteBuffer(string: "resealed"))
            await client.shutdown()
        }
    }

    /// A replica promoted in its primary's place (`CLUSTER FAILOVER`): the old primary answers MOVED, and the client
    /// goes on with the new one.
    @Test func aFailedOverPrimaryIsFollowed() async throws {
        try await RedisClusterGroup.with { cluster in
            let client = RESPClusterClient(seeds: [cluster.addresses[0]], configuration: cluster.nodes[0].configuration())
            let key = "{failing}:token"
            let slot = RESPHashSlot.of(key)
            try await client.set(key, to: "before")
            let replicaPort = try await cluster.replicaPort(ofSlot: slot)
            let replica = try #require(replicaPort.flatMap { cluster.node(port: $0) })
            try await replica.withClient { _ = try await $0.send(["CLUSTER", "FAILOVER"]) }
            let promoted = try await eventually {
                try await cluster.primaryPort(ofSlot: slot, askingNode: replica) == replica.port
            }
            #expect(promoted)
            try await client.set(key, to: "after")
            #expect(try await client.get(key) == ByteBuffer(string: "after"))
            let atPromoted = try await replica.withClient { try await $0.get(key) }
            #expect(atPromoted == ByteBuffer(string: "after"))
            await client.shutdown()
        }
    }
}
