import Foundation
import RESP

/// A Redis Cluster of three primaries and three replicas, real `redis-server` processes on 127.0.0.1 and free ports,
/// made by `redis-cli --cluster create` for one test and stopped after it. A node is failed over one second after it
/// stops answering (`cluster-node-timeout`).
package final class RedisClusterGroup: Sendable {
    /// Every node, in the order they were given to `redis-cli` (it makes the first three the primaries).
    package let nodes: [RedisServer]

    private init(nodes: [RedisServer]) { self.nodes = nodes }

    /// `127.0.0.1:PORT` of each node.
    package var addresses: [String] { nodes.map { "127.0.0.1:\($0.port)" } }

    /// Starts six nodes, joins them into a cluster, waits until every node sees all 16,384 slots served and every
    /// replica in sync, runs `body`, and stops every node whatever happens.
    package static func with<Result>(_ body: (RedisClusterGroup) async throws -> Result) async throws -> Result {
        try await withNodes(6, started: []) { nodes in
            let group = RedisClusterGroup(nodes: nodes)
            let (status, output) = try await ChildProcess.run(
                "redis-cli", ["--cluster", "create"] + group.addresses + ["--cluster-replicas", "1", "--cluster-yes"])
            guard status == 0 else { throw HarnessError("redis-cli --cluster create failed (\(status)):\n\(output)") }
            try await group.waitUntilServing()
            return try await body(group)
        }
    }

    private static func withNodes<Result>(
        _ count: Int, started: [RedisServer], _ body: ([RedisServer]) async throws -> Result
    ) async throws -> Result {
        guard started.count < count else { return try await body(started) }
        var options = RedisServer.Options()
        options.clusterNode = true
        return try await RedisServer.with(options) { node in try await withNodes(count, started: started + [node], body) }
    }

    /// The port of the primary serving `slot` now, as `node`'s `CLUSTER SLOTS` says.
    package func primaryPort(ofSlot slot: Int, askingNode node: RedisServer? = nil) async throws -> Int? {
        try await ports(ofSlot: slot, askingNode: node).first
    }

    /// The port of a replica of the primary serving `slot`, as that primary's `INFO replication` lists it.
    package func replicaPort(ofSlot slot: Int) async throws -> Int? {
        guard let port = try await ports(ofSlot: slot, askingNode: nil).first, let primary = node(port: port) else { return nil }
        let replication = try await primary.withClient { try await $0.send(["INFO", "replication"]).string ?? "" }
        // `slave0:ip=127.0.0.1,port=6380,state=online,…`
        let line = replication.split(separator: "\r\n").first { $0.hasPrefix("slave0:") } ?? ""
        let field = line.split(separator: ",").first { $0.hasPrefix("port=") }
        return field.flatMap { Int($0.dropFirst("port=".count)) }
    }

    /// The ports of the nodes serving `slot` as `node` sees them: the primary, then the replicas it knows of.
    private func ports(ofSlot slot: Int, askingNode node: RedisServer?) async throws -> [Int] {
        let reply = try await (node ?? nodes[0]).withClient { try await $0.send(["CLUSTER", "SLOTS"]) }
        for range in reply.elements ?? [] {
            guard let fields = range.elements, fields.count >= 3, let first = fields[0].integer, let last = fields[1].integer,
                (Int(first)...Int(last)).contains(slot)
            else { continue }
            return fields.dropFirst(2).compactMap { $0.elements?[1].integer.map { Int($0) } }
        }
        return []
    }

    /// Moves `slot` from the primary serving it to `target`, as `redis-cli --cluster reshard` does: `IMPORTING` at
    /// the target, `MIGRATING` at the source, its keys moved (`MIGRATE`), then `SETSLOT NODE` at every primary, the
    /// target first.
    /// `pause` is waited between the steps, so clients meet the slot half moved: at the source while its keys are
    /// still there, then redirected with `ASK` once they have left, then with `MOVED`.
    package func migrate(slot: Int, to target: RedisServer, pause: Duration) async throws {
        guard let sourcePort = try await primaryPort(ofSlot: slot), let source = node(port: sourcePort) else {
            throw HarnessError("no primary serves slot \(slot)")
        }
        let (sourceID, targetID) = (try await Self.id(of: source), try await Self.id(of: target))
        try await target.withClient { _ = try await $0.send(["CLUSTER", "SETSLOT", String(slot), "IMPORTING", sourceID]) }
        try await source.withClient { _ = try await $0.send(["CLUSTER", "SETSLOT", String(slot), "MIGRATING", targetID]) }
        try await Task.sleep(for: pause)
        try await source.withClient { node in
            while true {
                let keys = try await node.send(["CLUSTER", "GETKEYSINSLOT", String(slot), "100"]).elements?.compactMap(\.string) ?? []
                if keys.isEmpty { break }
                _ = try await node.send(["MIGRATE", "127.0.0.1", String(target.port), "", "0", "5000", "KEYS"] + keys)
            }
        }
        try await Task.sleep(for: pause)
        // The target first, then the source, then the others, as Redis's documentation orders it: the other way round,
        // the source would send clients to a target that, still importing, sends them back.
        let others = try await primaries().filter { $0.port != target.port && $0.port != source.port }
        for primary in [target, source] + others {
            try await primary.withClient { _ = try await $0.send(["CLUSTER", "SETSLOT", String(slot), "NODE", targetID]) }
        }
    }

    /// The nodes that are primaries now (`ROLE`).
    package func primaries() async throws -> [RedisServer] {
        var primaries: [RedisServer] = []
        for node in nodes {
            let role = try await node.withClient { client in try await client.send(["ROLE"]).elements?.first?.string }
            if role == "master" { primaries.append(node) }
        }
        return primaries
    }

    /// The node listening on `port`.
    package func node(port: Int) -> RedisServer? { nodes.first { $0.port == port } }

    /// A node's ID in the cluster.
    package static func id(of node: RedisServer) async throws -> String {
        try await node.withClient { client in
            guard let id = try await client.send(["CLUSTER", "MYID"]).string else { throw HarnessError("CLUSTER MYID gave no ID") }
            return id
        }
    }

    /// Until every node reports `cluster_state:ok` with all slots served, and every replica's link to its primary is
    /// up: 60 s at most.
    private func waitUntilServing() async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(60)
        while clock.now < deadline {
            var (serving, replicasInSync) = (0, 0)
            for node in nodes {
                let (info, replication) = try await node.withClient { client in
                    (try await client.send(["CLUSTER", "INFO"]).string ?? "", try await client.send(["INFO", "replication"]).string ?? "")
                }
                if info.contains("cluster_state:ok"), info.contains("cluster_slots_ok:16384") { serving += 1 }
                if replication.contains("role:slave"), replication.contains("master_link_status:up") { replicasInSync += 1 }
            }
            if serving == nodes.count, replicasInSync == nodes.count / 2 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw HarnessError("the cluster did not serve every slot with its replicas in sync within 60 s")
    }
}
