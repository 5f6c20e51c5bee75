import Foundation
package import Logging
package import NIOCore
package import RESP
package import TokenGateCore

/// The shared store on Redis (or Valkey): plain keys for sealed tokens and locks, GCRA buckets through one Lua
/// script, one key per ended entity (expiring with its end), one sorted set per provider that bounds how many it
/// holds, and a pub/sub channel for ended contexts. Every command has the configured deadline.
package final class RedisSharedStore: SharedStore {
    let client: any RESPDeployment
    private let prefix: String
    private let deadline: Duration
    private let clock: TokenGateClock
    private let limitBatches = RedisLimitBatches()

    /// A store on `client` (one server, Sentinel's primary, or a cluster: the keys of one command or script share a
    /// hash tag, a context's or a provider's, so each stays in one slot); keys and the channel start with `keyPrefix`.
    package init(client: any RESPDeployment, keyPrefix: String, deadline: Duration, clock: TokenGateClock = .system) {
        self.client = client
        self.prefix = keyPrefix
        self.deadline = deadline
        self.clock = clock
    }

    private var endedChannel: String { "\(prefix)ended" }
    /// How many messages may wait to be read before the oldest are dropped (and the replica catches up): a burst of
    /// ends (a batch of a thousand at each of several replicas) fits.
    static let unreadMessages = 65_536
    /// The most keys one `DEL` names.
    static let keysPerDelete = 200
    /// How long an end whose value does not read (not ours) is taken to hold: `endedContexts.refuseFor`'s default.
    static let unreadableEndHolds: Int64 = 86_400
    private var storedChannel: String { "\(prefix)stored" }

    package func value(at key: String) async throws -> [UInt8]? {
        try await refusals { try await client.get(key, deadline: deadline).map { Array($0.readableBytesView) } }
    }

    package func setValue(_ value: [UInt8], at key: String, lifetime: Duration, releasing lock: SharedLockHold?) async throws -> Bool {
        var args = [ByteBuffer(bytes: value), ByteBuffer(string: String(Self.milliseconds(lifetime))), ByteBuffer(string: storedChannel)]
        if let lock { args.append(ByteBuffer(string: lock.owner)) }
        let keys = [key] + (lock.map { [$0.key] } ?? [])
        let reply = try await refusals {
            try await client.evalSHA(script: RedisScripts.setAndAnnounce, keys: keys, binaryArgs: args, deadline: deadline)
        }
        return reply.integer == 1
    }

    package func removeValues(at keys: [String]) async throws {
        guard !keys.isEmpty else { return }
        // A cluster refuses a command whose keys span slots (`CROSSSLOT`), and each context has a slot of its own; and
        // no one call deletes more than a few hundred keys, so none holds Redis up for the others.
        let slots = client is RESPClusterClient ? Array(Dictionary(grouping: keys) { RESPHashSlot.of($0) }.values) : [keys]
        let groups = slots.flatMap { keys in
            stride(from: 0, to: keys.count, by: Self.keysPerDelete).map { Array(keys[$0..<min($0 + Self.keysPerDelete, keys.count)]) }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for keys in groups {
                group.addTask { _ = try await self.refusals { try await self.client.send(["DEL"] + keys, deadline: self.deadline) } }
            }
            try await group.waitForAll()
        }
    }

    package func lock(_ key: String, owner: String, lifetime: Duration) async throws -> Bool {
        let milliseconds = String(Self.milliseconds(lifetime))
        let reply = try await refusals {
            try await client.evalSHA(script: RedisScripts.lock, keys: [key], args: [owner, milliseconds], deadline: deadline)
        }
        guard let taken = reply.integer else { throw RESPError.unexpectedReply(command: "EVALSHA", reply: "\(reply)") }
        return taken == 1
    }

    package func value(at key: String, orLock lock: SharedLockHold, lifetime: Duration, ended: String?) async throws -> SharedValueOrLock {
        let reply = try await refusals {
            try await client.evalSHA(
                script: RedisScripts.valueOrLock, keys: [key, lock.key] + (ended.map { [$0] } ?? []),
                args: [lock.owner, String(Self.milliseconds(lifetime))], deadline: deadline)
        }
        guard let pair = reply.elements, pair.count == 2, let found = pair[0].integer else {
            throw RESPError.unexpectedReply(command: "EVALSHA", reply: "\(reply)")
        }
        if found == 2 {
            // An end that does not read as one is still an end: refused for as long as the longest one lasts.
            let record = pair[1].string.flatMap(EndedContextChange.record)
            return .ended(until: record?.until ?? clock.wallSeconds() + Self.unreadableEndHolds)
        }
        if found == 1, let value = pair[1].bytes { return .value(Array(value.readableBytesView)) }
        return pair[1].integer == 1 ? .locked : .heldByAnother
    }

    package func unlock(_ key: String, owner: String) async throws {
        _ = try await refusals { try await client.evalSHA(script: RedisScripts.unlock, keys: [key], args: [owner], deadline: deadline) }
    }

    package func acquire(_ buckets: [SharedRateBucket]) async throws -> SharedRateOutcome {
        let reply = try await refusals {
            try await client.evalSHA(script: RedisScripts.acquire, keys: buckets.map(\.key), args: Self.acquireArguments(buckets), deadline: deadline)
        }
        return try Self.outcome(of: reply)
    }

    /// A limit check is the one call on a cached token's path: on the requesting event loop's open connection it
    /// costs no task, its reply is read on that loop, and the checks of one turn of the loop go out as one script
    /// call (``RedisLimitBatches``).
    package var acquiresWithoutTask: Bool { client.isOpenOnCurrentEventLoop }

    package func acquire(_ buckets: [SharedRateBucket], completion: @escaping @Sendable (Result<SharedRateOutcome, any Error>) -> Void) {
        let check = RedisLimitBatches.Check(buckets: buckets, completion: completion)
        guard limitBatches.add(check, send: { self.send($0) }) else { return sendFromTask([check]) }
    }

    /// Sends a turn's checks on this event loop's connection: one request's with ``RedisScripts/acquire``, more
    /// with ``RedisScripts/acquireBatch``.
    private func send(_ checks: [RedisLimitBatches.Check]) {
        let sent = client.sendOnCurrentEventLoop(Self.command(for: checks), deadline: deadline) { result in
            switch result {
            case .success(let reply):
                Self.answer(checks, with: reply)
            case .failure(let error as RESPError) where error.serverCode == "NOSCRIPT":
                // The server lost its scripts (a restart, a failover): `EVAL` loads it again, from a task.
                self.sendFromTask(checks)
            case .failure(let error):
                for check in checks { check.completion(.failure(Self.refusal(error))) }
            }
        }
        // The connection closed since `acquiresWithoutTask` was asked.
        if !sent { sendFromTask(checks) }
    }

    /// ``send(_:)`` from a task, with `EVAL` when the server does not have the script (which loads it).
    private func sendFromTask(_ checks: [RedisLimitBatches.Check]) {
        Task {
            do {
                let reply = try await refusals {
                    do {
                        return try await client.send(Self.command(for: checks), deadline: deadline)
                    } catch let error as RESPError where error.serverCode == "NOSCRIPT" {
                        return try await client.send(Self.command(for: checks, loading: true), deadline: deadline)
                    }
                }
                Self.answer(checks, with: reply)
            } catch {
                for check in checks { check.completion(.failure(error)) }
            }
        }
    }

    /// One request's checks with ``RedisScripts/acquire``, more with ``RedisScripts/acquireBatch``, written straight
    /// into one command (`EVAL` with `loading`).
    private static func command(for checks: [RedisLimitBatches.Check], loading: Bool = false) -> RESPCommand {
        let buckets = checks.reduce(0) { $0 + $1.buckets.count }
        let batch = checks.count > 1
        let script = batch ? RedisScripts.acquireBatch : RedisScripts.acquire
        var command = script.evalSHA(keyCount: buckets, capacity: buckets * 100, loading: loading)
        for check in checks {
            for bucket in check.buckets { command.append(bucket.key) }
        }
        if batch { command.append(Int64(checks.count)) }
        for check in checks {
            if batch { command.append(Int64(check.buckets.count)) }
            for bucket in check.buckets {
                command.append(bucket.emissionIntervalMicroseconds)
                command.append(bucket.toleranceMicroseconds)
            }
        }
        return command.command
    }

    /// Hands each check its part of `reply`: one pair of integers per check, in order.
    private static func answer(_ checks: [RedisLimitBatches.Check], with reply: RESPValue) {
        let outcomes: [SharedRateOutcome]
        do {
            outcomes = try Self.outcomes(of: reply, count: checks.count)
        } catch {
            for check in checks { check.completion(.failure(error)) }
            return
        }
        for (check, outcome) in zip(checks, outcomes) { check.completion(.success(outcome)) }
    }

    private static func acquireArguments(_ buckets: [SharedRateBucket]) -> [String] {
        buckets.flatMap { [String($0.emissionIntervalMicroseconds), String($0.toleranceMicroseconds)] }
    }

    private static func outcome(of reply: RESPValue) throws -> SharedRateOutcome {
        try outcomes(of: reply, count: 1)[0]
    }

    /// What the limit scripts return: for each of `count` requests `0, 0` (allowed) or the 1-based index of the
    /// bucket that refused and the microseconds until one request passes.
    private static func outcomes(of reply: RESPValue, count: Int) throws -> [SharedRateOutcome] {
        guard let values = reply.elements, values.count == 2 * count else {
            throw RESPError.unexpectedReply(command: "EVALSHA", reply: "\(reply)")
        }
        return try stride(from: 0, to: values.count, by: 2).map { index in
            guard let refused = values[index].integer, let wait = values[index + 1].integer else {
                throw RESPError.unexpectedReply(command: "EVALSHA", reply: "\(reply)")
            }
            return refused == 0 ? .allowed : .limited(index: Int(refused) - 1, retryAfter: .microseconds(wait))
        }
    }

    package func admit(_ member: String, to sets: [SharedDistinctSet]) async throws -> Int? {
        let args = [member] + sets.flatMap { [String($0.capacity), String(Self.milliseconds($0.lifetime))] }
        let reply = try await refusals {
            try await client.evalSHA(script: RedisScripts.admitDistinct, keys: sets.map(\.key), args: args, deadline: deadline)
        }
        guard let index = reply.integer, (0...Int64(sets.count)).contains(index) else {
            throw RESPError.unexpectedReply(command: "EVALSHA", reply: "\(reply)")
        }
        return index == 0 ? nil : Int(index) - 1
    }

    package func endedUntil(at key: String) async throws -> Int64? {
        guard let value = try await value(at: key) else { return nil }
        // An end that does not read as one is still an end: refused for as long as the longest one lasts.
        return EndedContextChange.record(String(decoding: value, as: UTF8.self))?.until ?? clock.wallSeconds() + Self.unreadableEndHolds
    }

    package func admit(_ entries: [(entry: String, until: Int64)], now: Int64, into index: String, capacity: Int) async throws -> Bool {
        let args = [String(now), String(capacity)] + entries.flatMap { [$0.entry, String($0.until)] }
        let reply = try await refusals {
            try await client.evalSHA(script: RedisScripts.admitEntries, keys: [index], args: args, deadline: deadline)
        }
        guard let admitted = reply.integer else { throw RESPError.unexpectedReply(command: "EVALSHA", reply: "\(reply)") }
        return admitted == 1
    }

    package func recordEnds(_ changes: [EndedContextChange], at keys: [String]) async throws -> [EndedContexts.Record] {
        // One call per slot in a cluster (each entity has a slot of its own), one for them all on one server.
        let indexes = Array(changes.indices)
        let groups = client is RESPClusterClient ? Array(Dictionary(grouping: indexes) { RESPHashSlot.of(keys[$0]) }.values) : [indexes]
        var records = [EndedContexts.Record?](repeating: nil, count: changes.count)
        try await withThrowingTaskGroup(of: [(Int, EndedContexts.Record)].self) { group in
            for indexes in groups {
                group.addTask {
                    let args =
                        [self.endedChannel]
                        + indexes.flatMap { index in
                            let change = changes[index]
                            return [
                                String(change.until ?? self.clock.wallSeconds()), EndedContextChange.word(change.origin), "end \(change.subject)",
                            ]
                        }
                    let reply = try await self.refusals {
                        try await self.client.evalSHA(
                            script: RedisScripts.recordEnds, keys: indexes.map { keys[$0] }, args: args, deadline: self.deadline)
                    }
                    guard let words = reply.elements, words.count == 2 * indexes.count else {
                        throw RESPError.unexpectedReply(command: "EVALSHA", reply: "\(reply)")
                    }
                    return try indexes.enumerated().map { position, index in
                        guard let until = words[2 * position].string.flatMap({ Int64($0) }),
                            let origin = words[2 * position + 1].string.flatMap(EndedContextChange.origin)
                        else { throw RESPError.unexpectedReply(command: "EVALSHA", reply: "\(reply)") }
                        return (index, EndedContexts.Record(until: until, origin: origin))
                    }
                }
            }
            for try await found in group { for (index, record) in found { records[index] = record } }
        }
        return records.compactMap { $0 }
    }

    package func recordLift(_ change: EndedContextChange, at key: String, entry: String, index: String) async throws -> EndedContexts.Lift {
        let reply = try await refusals {
            try await client.evalSHA(
                script: RedisScripts.recordLift, keys: [key], args: [EndedContextChange.word(change.origin), change.liftMessage, endedChannel],
                deadline: deadline)
        }
        guard let elements = reply.elements, let outcome = elements.first?.integer else {
            throw RESPError.unexpectedReply(command: "EVALSHA", reply: "\(reply)")
        }
        switch outcome {
        case 1:
            // Its count in the provider's index (another slot): a count left behind lapses with the end's time anyway.
            _ = try? await client.send(["ZREM", index, entry], deadline: deadline)
            return .lifted
        case 2:
            guard let record = elements.dropFirst().first?.string.flatMap(EndedContextChange.record) else { return .notEnded }
            return .kept(record)
        default:
            return .notEnded
        }
    }

    package func watch(
        subscribed: @escaping @Sendable () -> Void, interrupted: @escaping @Sendable () -> Void,
        ended: @escaping @Sendable (EndedContextChange) -> Void, stored: @escaping @Sendable (_ key: String, _ value: [UInt8]?) -> Void
    ) async throws {
        let (endedChannel, storedChannel) = (self.endedChannel, self.storedChannel)
        let gaps: @Sendable (RESPSubscriptionGap) -> Void = { gap in
            switch gap {
            case .lost: interrupted()
            case .restored: subscribed()
            case .overflowed:
                // Still subscribed: what was dropped is unknown, what comes next is received.
                interrupted()
                subscribed()
            }
        }
        try await client.subscribe(to: [endedChannel, storedChannel], bufferSize: Self.unreadMessages, gaps: gaps) { messages in
            subscribed()
            for await message in messages {
                if message.channel == storedChannel {
                    // `key\nvalue`; a key alone from a replica of an earlier version.
                    let payload = message.payload.readableBytesView
                    if let newline = payload.firstIndex(of: UInt8(ascii: "\n")) {
                        stored(String(decoding: payload[..<newline], as: UTF8.self), Array(payload[payload.index(after: newline)...]))
                    } else {
                        stored(String(buffer: message.payload), nil)
                    }
                } else {
                    // One line per change: a batch of ends is one message.
                    for line in String(buffer: message.payload).split(separator: "\n") {
                        if let change = EndedContextChange(message: String(line)) { ended(change) }
                    }
                }
            }
        }
    }

    package func shutdown() async { await client.shutdown() }

    /// Error replies that say the server cannot serve at all (loading, a replica after a failover, a cluster
    /// without quorum, a busy script, lost credentials): the store is down, as when it does not answer.
    static let unavailableCodes: Set<Substring> = ["LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "NOAUTH", "WRONGPASS"]

    /// `body`, with any other error reply (`WRONGTYPE` on one key, `NOPERM`, `OOM` on a write) turned into a
    /// ``SharedStoreCommandRefusal``: that call falls back, the store stays in use.
    @discardableResult
    private func refusals<Result>(_ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch {
            throw Self.refusal(error)
        }
    }

    /// `error`, or the ``SharedStoreCommandRefusal`` it stands for.
    private static func refusal(_ error: any Error) -> any Error {
        guard let code = (error as? RESPError)?.serverCode, !unavailableCodes.contains(code) else { return error }
        return SharedStoreCommandRefusal(code: String(code))
    }
}

extension SharedState {
    /// The shared state `settings` describe, on Redis. Opens no connection yet; throws only for settings the
    /// Redis client cannot use (a URL it does not read, a CA file it cannot load).
    /// `eventLoopGroup` should be the listeners' (nil: NIO's shared group): a request's commands then go out on a
    /// connection of the loop it runs on.
    package static func redis(
        _ settings: SharedStateSettings, metrics: GatewayMetrics, clock: TokenGateClock = .system,
        eventLoopGroup: (any EventLoopGroup)? = nil, logger: Logger
    ) throws -> SharedState {
        var configuration: RESPConfiguration
        if let sentinel = settings.redis.sentinel {
            let addresses = sentinel.hostsAndPorts.map { RESPConfiguration.Sentinel.Address(host: $0.host, port: $0.port) }
            // Host and port stand for the primary until a Sentinel names it, before the first connection.
            configuration = RESPConfiguration(host: addresses[0].host, port: addresses[0].port)
            configuration.database = sentinel.database
            // Sentinels name addresses, not host names: a certificate is checked against the address it is met at.
            if sentinel.tls { configuration.tls = RESPConfiguration.TLS(trustRoots: .system, serverName: nil) }
            var watched = RESPConfiguration.Sentinel(addresses: addresses, primaryName: sentinel.primaryName)
            watched.username = sentinel.username
            watched.password = sentinel.password
            configuration.sentinel = watched
        } else if let cluster = settings.redis.cluster {
            // Each node's address replaces this one (see RESPClusterClient).
            let seed = SharedStateSettings.SentinelSettings.hostAndPort(cluster[0])
            configuration = RESPConfiguration(host: seed.host, port: seed.port)
        } else {
            configuration = try RESPConfiguration(url: settings.redis.url)
        }
        if let username = settings.redis.username { configuration.username = username }
        if let password = settings.redis.password { configuration.password = password }
        if let caFile = settings.redis.caFile {
            configuration.tls = RESPConfiguration.TLS(trustRoots: .certificateFile(caFile), serverName: configuration.tls?.serverName)
        }
        configuration.maxConnections = settings.redis.maxConnections
        configuration.commandTimeout = settings.redis.timeout
        // A request never waits longer than one deadline for a connection, new or pooled.
        configuration.leaseTimeout = settings.redis.timeout
        configuration.connectTimeout = max(settings.redis.timeout, .milliseconds(200))
        configuration.reconnectBackoff = .init(initial: .milliseconds(100), maximum: .seconds(2))
        var redisLogger = logger
        redisLogger[metadataKey: "component"] = "redis"
        let client: any RESPDeployment =
            if let cluster = settings.redis.cluster {
                RESPClusterClient(seeds: cluster, configuration: configuration, eventLoopGroup: eventLoopGroup, logger: redisLogger)
            } else {
                try RESPClient(configuration: configuration, eventLoopGroup: eventLoopGroup, logger: redisLogger)
            }
        let store = RedisSharedStore(client: client, keyPrefix: settings.keyPrefix, deadline: settings.redis.timeout, clock: clock)
        return SharedState(settings: settings, store: store, metrics: metrics, clock: clock, logger: logger)
    }

}

extension RedisSharedStore {
    /// Whole milliseconds of `duration`, at least 1 (Redis refuses a zero expiry).
    fileprivate static func milliseconds(_ duration: Duration) -> Int64 {
        max(1, duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
    }
}
