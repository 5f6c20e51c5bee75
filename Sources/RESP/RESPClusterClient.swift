package import Logging
package import NIOCore
import Synchronization

/// A Redis deployment a caller talks to as one: one server, or the primary Sentinel names (``RESPClient``), or a
/// cluster (``RESPClusterClient``).
package protocol RESPDeployment: RESPCommandSending {
    /// Subscribes to `channels` and runs `body` with the messages, telling `gaps` what it may have missed (see
    /// ``RESPClient/subscribe(to:bufferSize:gaps:_:)``).
    func subscribe<Result: Sendable>(
        to channels: [String], bufferSize: Int, gaps: @escaping @Sendable (RESPSubscriptionGap) -> Void,
        _ body: (RESPSubscription) async throws -> Result
    ) async throws -> Result
    /// Closes every connection; commands fail with ``RESPError/shutdown`` afterwards.
    func shutdown() async
    /// Sends `command` without a task when it can (see ``RESPClient/sendOnCurrentEventLoop(_:deadline:onReply:)``);
    /// false when it cannot, and nothing was sent.
    func sendOnCurrentEventLoop(
        _ command: RESPCommand, deadline: Duration?, onReply: @escaping @Sendable (Result<RESPValue, any Error>) -> Void
    ) -> Bool
    /// Whether ``sendOnCurrentEventLoop(_:deadline:onReply:)`` would send now, from this thread.
    var isOpenOnCurrentEventLoop: Bool { get }
}

extension RESPDeployment {
    /// ``subscribe(to:bufferSize:gaps:_:)`` keeping up to 1,024 unread messages.
    package func subscribe<Result: Sendable>(
        to channels: [String], gaps: @escaping @Sendable (RESPSubscriptionGap) -> Void = { _ in },
        _ body: (RESPSubscription) async throws -> Result
    ) async throws -> Result {
        try await subscribe(to: channels, bufferSize: 1024, gaps: gaps, body)
    }
}

extension RESPClient: RESPDeployment {}

/// A Redis Cluster: each command goes to the primary serving its key's slot (``RESPHashSlot``), over that node's own
/// ``RESPClient`` (connections shared per event loop, as for one server).
///
/// The slot map comes from `CLUSTER SLOTS`, asked of the seed nodes (then of any node known) on first use. A `MOVED`
/// reply (the slot has a new owner: a finished migration, a failover) is followed at once, the slot remembered,
/// and the whole map asked for again in the background; an `ASK` reply (the slot is migrating and this key has
/// left already) is followed for that command only, `ASKING` first, on a connection of its own. Scripts are loaded
/// on each node as it first runs them (`NOSCRIPT`, then `EVAL`). Keys used together in one command or script
/// must share a slot: give them one hash tag.
///
/// Pub/sub goes through the first seed node (a cluster passes every message to every node); while that node is
/// down, the subscription retries it.
package final class RESPClusterClient: RESPDeployment, Sendable {
    /// The settings every node's client is made with; `host` and `port` are each node's.
    package let configuration: RESPConfiguration
    private let seeds: [String]
    private let eventLoopGroup: (any EventLoopGroup)?
    private let logger: Logger
    private let nodes = Mutex<[String: RESPClient]>([:])
    private let state = Mutex(MapState())

    private struct MapState {
        var map: RESPSlotMap?
        var loading: Task<RESPSlotMap, any Error>?
        var isShutdown = false
    }

    /// A client of the cluster that `seeds` (`host:port` of some of its nodes) belong to; opens no connection until
    /// the first command.
    package init(
        seeds: [String], configuration: RESPConfiguration, eventLoopGroup: (any EventLoopGroup)? = nil,
        logger: Logger = Logger(label: "resp")
    ) {
        precondition(!seeds.isEmpty, "a cluster client needs at least one seed node")
        self.seeds = seeds
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
    }

    /// Sends `command` to the node that serves its key, following redirections (at most five, from the third on 20 ms
    /// apart), and trying again a few times, 20 ms apart, a command whose keys a migration has split between two nodes
    /// for now (`TRYAGAIN`).
    @discardableResult
    package func send(_ command: RESPCommand, deadline: Duration? = nil) async throws -> RESPValue {
        var target = try await node(for: command)
        var (redirections, retries) = (0, 0)
        while true {
            do {
                return try await target.send(command, deadline: deadline)
            } catch let error as RESPError {
                if error.serverCode == "TRYAGAIN", retries < Self.tryAgainRetries {
                    retries += 1
                    try await Task.sleep(for: .milliseconds(20))
                    continue
                }
                guard let redirection = Redirection(error) else { throw error }
                redirections += 1
                guard redirections <= 5 else {
                    throw RESPError.unavailable(reason: "\(command.name) was redirected more than five times in the cluster")
                }
                // Nodes that disagree for a moment (a migration's last step reaching one before the other) send a
                // command back and forth: give them time to agree.
                if redirections > 2 { try await Task.sleep(for: .milliseconds(20)) }
                switch redirection {
                case .moved(let slot, let node):
                    state.withLock { $0.map?.move(slot, to: node) }
                    reloadMap()
                    target = try client(at: node)
                case .ask(let node):
                    return try await client(at: node).withConnection { connection in
                        try await connection.send(RESPCommand(["ASKING"]), deadline: deadline)
                        return try await connection.send(command, deadline: deadline)
                    }
                }
            }
        }
    }

    /// How often a `TRYAGAIN` is retried: 100 ms in all, about as long as moving one slot's keys in a batch takes.
    static let tryAgainRetries = 5

    /// Always false: a command may be redirected, and following that takes a task.
    package func sendOnCurrentEventLoop(
        _ command: RESPCommand, deadline: Duration?, onReply: @escaping @Sendable (Result<RESPValue, any Error>) -> Void
    ) -> Bool { false }

    package var isOpenOnCurrentEventLoop: Bool { false }

    package func subscribe<Result: Sendable>(
        to channels: [String], bufferSize: Int, gaps: @escaping @Sendable (RESPSubscriptionGap) -> Void,
        _ body: (RESPSubscription) async throws -> Result
    ) async throws -> Result {
        try await client(at: seeds[0]).subscribe(to: channels, bufferSize: bufferSize, gaps: gaps, body)
    }

    package func shutdown() async {
        let loading = state.withLock { state in
            state.isShutdown = true
            return state.loading
        }
        loading?.cancel()
        for client in nodes.withLock({ Array($0.values) }) { await client.shutdown() }
    }

    /// The client of the node serving `command`'s key; any node's for a command without a key.
    private func node(for command: RESPCommand) async throws -> RESPClient {
        let map = try await slotMap()
        guard let key = command.routingKey, let owner = map.owner(of: RESPHashSlot.of(key)) else { return try client(at: seeds[0]) }
        return try client(at: owner)
    }

    /// The slot map, loaded once however many commands wait for it.
    private func slotMap() async throws -> RESPSlotMap {
        let loading = try state.withLock { state -> Task<RESPSlotMap, any Error>? in
            guard !state.isShutdown else { throw RESPError.shutdown }
            if state.map != nil { return nil }
            if state.loading == nil { state.loading = Task { try await self.loadMap() } }
            return state.loading
        }
        guard let loading else { return state.withLock { $0.map ?? RESPSlotMap() } }
        return try await loading.value
    }

    /// Asks for the whole map again, unless a request for it is under way.
    private func reloadMap() {
        state.withLock { state in
            guard !state.isShutdown, state.loading == nil else { return }
            state.loading = Task { try await self.loadMap() }
        }
    }

    /// `CLUSTER SLOTS` from the first node that answers: the seeds, then every node met since.
    private func loadMap() async throws -> RESPSlotMap {
        defer { state.withLock { $0.loading = nil } }
        var failures: [String] = []
        let known = nodes.withLock { Array($0.keys) }.sorted().filter { !seeds.contains($0) }
        for node in seeds + known {
            do {
                let reply = try await client(at: node).send(RESPCommand(["CLUSTER", "SLOTS"]))
                guard let map = RESPSlotMap(clusterSlots: reply) else {
                    failures.append("\(node): an unreadable CLUSTER SLOTS reply")
                    continue
                }
                state.withLock { $0.map = map }
                return map
            } catch {
                failures.append("\(node): \(error)")
            }
        }
        throw RESPError.unavailable(reason: "no cluster node gave its slots: " + failures.joined(separator: "; "))
    }

    /// The client of the node at `host:port`, made on first use.
    private func client(at node: String) throws -> RESPClient {
        if let client = nodes.withLock({ $0[node] }) { return client }
        guard let colon = node.lastIndex(of: ":"), let port = Int(node[node.index(after: colon)...]) else {
            throw RESPError.unavailable(reason: "a cluster node address that is not host:port: \(node)")
        }
        var configuration = configuration
        configuration.host = String(node[..<colon]).trimmingBrackets
        configuration.port = port
        configuration.sentinel = nil
        let made = try RESPClient(configuration: configuration, eventLoopGroup: eventLoopGroup, logger: logger)
        let (client, spare) = nodes.withLock { nodes -> (RESPClient, RESPClient?) in
            if let existing = nodes[node] { return (existing, made) }
            nodes[node] = made
            return (made, nil)
        }
        if let spare { Task { await spare.shutdown() } }  // it opened no connection
        return client
    }
}

/// A cluster's redirection: `MOVED <slot> <host:port>` or `ASK <slot> <host:port>`.
private enum Redirection {
    case moved(slot: Int, node: String)
    case ask(node: String)

    init?(_ error: RESPError) {
        guard case .server(let message) = error else { return nil }
        let fields = message.split(separator: " ")
        guard fields.count == 3, let slot = Int(fields[1]), (0..<RESPHashSlot.count).contains(slot) else { return nil }
        switch fields[0] {
        case "MOVED": self = .moved(slot: slot, node: String(fields[2]))
        case "ASK": self = .ask(node: String(fields[2]))
        default: return nil
        }
    }
}

extension String {
    /// An IPv6 address without the brackets a `host:port` form puts around it.
    fileprivate var trimmingBrackets: String {
        hasPrefix("[") && hasSuffix("]") ? String(dropFirst().dropLast()) : self
    }
}
