package import Logging
package import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// The connections to one server, the way the gateway talks to Redis: the configured server, or the primary that
/// Redis Sentinel names (``RESPConfiguration/sentinel``), followed across failovers.
///
/// ``send(_:deadline:)`` multiplexes: commands from concurrent callers are pipelined on a few shared connections,
/// one per event loop, and a command sent from one of those loops stays on it (see ``RESPSharedConnections``).
/// ``withConnection(_:)`` leases a connection of its own to a caller that needs one (a blocking command, a
/// transaction): from a bounded pool, opening one when none is idle and fewer than `maxConnections` exist; otherwise
/// the caller waits, at most `leaseTimeout`, for one to come back. After a failed connection attempt neither opens
/// a connection until a backoff with jitter has passed, and callers fail fast with
/// ``RESPError/unavailable(reason:)`` meanwhile, so a caller with a fallback uses it at once. Call ``shutdown()``
/// when done: it closes every connection.
///
/// ```swift
/// var configuration = try RESPConfiguration(url: "redis://cache.internal:6379/0")
/// configuration.password = environment["REDIS_PASSWORD"]
/// let client = try RESPClient(configuration: configuration)
/// defer { Task { await client.shutdown() } }
/// let acquired = try await client.set("lock:trip-1", to: owner, onlyIfAbsent: true, expiresIn: .seconds(10))
/// ```
package final class RESPClient: RESPCommandSending, Sendable {
    /// The configuration it was made with.
    package let configuration: RESPConfiguration
    /// The loops its connections run on.
    package let eventLoopGroup: any EventLoopGroup
    let tlsContext: NIOSSLContext?
    let logger: Logger
    private let state: Mutex<RESPPoolState>
    private let shared: RESPSharedConnections
    private let sentinelWatch = Mutex<SentinelWatch>(.notStarted)
    private let waiterIDs = Atomic<Int>(0)

    /// A client for `configuration` on `eventLoopGroup` (nil: NIO's shared singleton group); opens no connection
    /// until the first command. Throws when the TLS settings cannot be loaded (an unreadable CA file).
    package init(
        configuration: RESPConfiguration, eventLoopGroup: (any EventLoopGroup)? = nil,
        logger: Logger = Logger(label: "resp")
    ) throws {
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        self.logger = logger
        self.tlsContext = try configuration.tls.map(Self.makeTLSContext)
        self.state = Mutex(
            RESPPoolState(
                maxConnections: max(1, configuration.maxConnections), maxWaiters: configuration.maxWaiters,
                backoff: configuration.reconnectBackoff))
        self.shared = RESPSharedConnections(
            eventLoopGroup: self.eventLoopGroup, perEventLoop: configuration.connectionsPerEventLoop,
            maxConnections: configuration.maxConnections, backoff: configuration.reconnectBackoff)
    }

    private static func makeTLSContext(_ tls: RESPConfiguration.TLS) throws -> NIOSSLContext {
        var settings = TLSConfiguration.makeClientConfiguration()
        settings.certificateVerification = .fullVerification
        switch tls.trustRoots {
        case .system: settings.trustRoots = .default
        case .certificateFile(let path): settings.trustRoots = .file(path)
        }
        return try NIOSSLContext(configuration: settings)
    }

    /// Sends `command` on a shared connection and returns its reply. Not for a command that blocks its connection
    /// (`BLPOP`, `WAIT`): the commands behind it would wait too; lease a connection for that.
    @discardableResult
    package func send(_ command: RESPCommand, deadline: Duration? = nil) async throws -> RESPValue {
        let connection = try await shared.connection(in: shared.slot(), of: self)
        do {
            return try await connection.send(command, deadline: deadline)
        } catch let error as RESPError where error.serverCode == "READONLY" {
            await connection.close()  // see withConnection
            throw error
        }
    }

    /// Sends `command` without a task when this thread is one of the client's event loops and that loop's shared
    /// connection is open: `onReply` is called once, on this thread, with the reply (an error reply as
    /// ``RESPError/server(_:)``). False otherwise (another thread, the connection not open yet): nothing was sent,
    /// and ``send(_:deadline:)`` is the way.
    package func sendOnCurrentEventLoop(
        _ command: RESPCommand, deadline: Duration?, onReply: @escaping @Sendable (Result<RESPValue, any Error>) -> Void
    ) -> Bool {
        guard let connection = shared.openConnectionOfCurrentLoop() else { return false }
        connection.writeOnItsLoop(command, deadline: deadline).whenComplete { result in
            // See withConnection.
            if case .failure(let error as RESPError) = result, error.serverCode == "READONLY" { connection.channel.close(promise: nil) }
            onReply(result)
        }
        return true
    }

    /// Whether ``sendOnCurrentEventLoop(_:deadline:onReply:)`` would send now, from this thread.
    package var isOpenOnCurrentEventLoop: Bool { shared.openConnectionOfCurrentLoop() != nil }

    /// Runs `body` with a connection of its own (for several commands in a row, pipelined if sent concurrently);
    /// the connection goes back to the pool afterwards, or is dropped if it closed.
    package func withConnection<Result: Sendable>(
        _ body: (RESPConnection) async throws -> Result
    ) async throws -> Result {
        let connection = try await lease()
        do {
            let result = try await body(connection)
            await release(connection)
            return result
        } catch {
            // A primary demoted to a replica (a Sentinel failover) refuses writes: its connections are dropped, so
            // the next ones go to the primary the Sentinels name now.
            if (error as? RESPError)?.serverCode == "READONLY" { await connection.close() }
            await release(connection)
            throw error
        }
    }

    /// Closes every connection (commands in flight fail with ``RESPError/connectionClosed``), fails every waiting
    /// caller with ``RESPError/shutdown``, and returns once no connection attempt is still under way.
    package func shutdown() async {
        let (connections, waiters) = state.withLock { $0.shutdown() }
        for waiter in waiters { waiter.continuation.resume(throwing: RESPError.shutdown) }
        for connection in connections { await connection.close() }
        await shared.shutdown()
        let watch = sentinelWatch.withLock { state -> Task<Void, Never>? in
            defer { state = .stopped }
            guard case .running(let task) = state else { return nil }
            return task
        }
        watch?.cancel()
        await watch?.value
        await withCheckedContinuation { continuation in
            if !state.withLock({ $0.waitUntilDrained(continuation) }) { continuation.resume() }
        }
    }

    private enum SentinelWatch {
        case notStarted
        case running(Task<Void, Never>)
        case stopped
    }

    /// Runs `watch` in a task of its own, the first time only, until ``shutdown()``.
    func startSentinelWatch(_ watch: @escaping @Sendable () async -> Void) {
        sentinelWatch.withLock { state in
            guard case .notStarted = state else { return }
            state = .running(Task { await watch() })
        }
    }

    /// The server moved (a Sentinel failover): closes every connection not in use, so no command goes to the old
    /// server again, and clears the backoffs, so the next command connects at once.
    func forgetServer() {
        let connections = state.withLock { $0.forgetServer() } + shared.forgetServer()
        for connection in connections { connection.channel.close(promise: nil) }
    }

    /// Whether ``shutdown()`` was called.
    var isShutdown: Bool { state.withLock { $0.isShutdown } }

    private func lease() async throws -> RESPConnection {
        let deadline = NIODeadline.now() + TimeAmount(configuration.leaseTimeout)
        while true {
            switch try await nextGrant(until: deadline) {
            case .connection(let connection): return connection
            case .connect: return try await connect()
            case .retry: continue
            }
        }
    }

    private func nextGrant(until deadline: NIODeadline) async throws -> RESPPoolState.Grant {
        let id = waiterIDs.wrappingAdd(1, ordering: .relaxed).newValue
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if Task.isCancelled { return continuation.resume(throwing: CancellationError()) }
                switch state.withLock({ $0.lease(id: id, continuation: continuation, now: .now) }) {
                case .granted(let grant): continuation.resume(returning: grant)
                case .failed(let error): continuation.resume(throwing: error)
                case .enqueued:
                    // Not cancelled when the waiter is served: failing a waiter that is gone does nothing.
                    eventLoopGroup.any().scheduleTask(deadline: deadline) {
                        self.failWaiter(id, with: RESPError.poolExhausted)
                    }
                }
            }
        } onCancel: {
            failWaiter(id, with: CancellationError())
        }
    }

    private func failWaiter(_ id: Int, with error: any Error) {
        state.withLock { $0.removeWaiter(id: id) }?.continuation.resume(throwing: error)
    }

    private func connect() async throws -> RESPConnection {
        let connection: RESPConnection
        do {
            connection = try await openConnection()
        } catch is CancellationError {
            for waiter in state.withLock({ $0.connectAbandoned() }) { waiter.continuation.resume(returning: .retry) }
            throw CancellationError()
        } catch {
            let reason = (error as? RESPError).map { "\($0)" } ?? "\(error)"
            let (delay, waiters) = state.withLock { $0.connectFailed(reason: reason, now: .now) }
            logger.warning(
                "Redis connection failed",
                metadata: ["server": "\(configuration)", "error": "\(reason)", "retry_in": "\(delay)"])
            for waiter in waiters { waiter.continuation.resume(returning: .retry) }
            throw (error as? RESPError) ?? .unavailable(reason: reason)
        }
        let (keep, failures) = state.withLock { $0.connected(connection) }
        if failures > 0 { logger.info("Redis connection restored", metadata: ["server": "\(configuration)"]) }
        guard keep else {
            await connection.close()
            throw RESPError.shutdown
        }
        return connection
    }

    private func release(_ connection: RESPConnection) async {
        let (handTo, retry, close) = state.withLock { $0.release(connection) }
        handTo?.continuation.resume(returning: .connection(connection))
        for waiter in retry { waiter.continuation.resume(returning: .retry) }
        if close { await connection.close() }
    }
}
