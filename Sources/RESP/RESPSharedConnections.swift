import Logging
import NIOCore
import NIOPosix
import Synchronization

/// The connections ``RESPClient/send(_:deadline:)`` shares between concurrent commands: one per event loop of the
/// client's group (``RESPConfiguration/connectionsPerEventLoop``, at most ``RESPConfiguration/maxConnections`` in
/// all), each opened on its loop.
///
/// A command sent from a thread of one of those loops (a request task on the gateway's loop) goes out on that loop's
/// connection: the write happens at once, on that thread, and the reply resumes the task there, so no job crosses
/// threads. From any other thread a command takes the next connection in turn. Commands are pipelined, replies
/// matched in send order (as valkey-swift and RediStack do), and writes made in one turn of the loop leave in one
/// flush, so concurrent requests share system calls and round trips instead of leasing a connection each.
///
/// A connection that closes (a timeout, the server going away, a demoted primary) is replaced by the next command
/// that needs it; after a failed attempt its slot opens none until a backoff has passed and fails commands fast
/// with ``RESPError/unavailable(reason:)`` meanwhile.
final class RESPSharedConnections: Sendable {
    final class Slot: Sendable {
        let eventLoop: any EventLoop
        let state: Mutex<RESPSharedSlotState>

        init(eventLoop: any EventLoop, backoff: RESPConfiguration.Backoff) {
            self.eventLoop = eventLoop
            self.state = Mutex(RESPSharedSlotState(backoff: backoff))
        }
    }

    private let slots: [Slot]
    /// For each loop of the group, the indices in `slots` of its connections.
    private let slotsOfLoop: [ObjectIdentifier: [Int]]
    private let turn = Atomic<Int>(0)

    init(eventLoopGroup: any EventLoopGroup, perEventLoop: Int, maxConnections: Int, backoff: RESPConfiguration.Backoff) {
        let loops = Array(eventLoopGroup.makeIterator())
        // Loop by loop, then round after round, so a cap below loops × perEventLoop spreads over the loops first.
        var slots: [Slot] = []
        var slotsOfLoop: [ObjectIdentifier: [Int]] = [:]
        outer: for _ in 0..<max(1, perEventLoop) {
            for loop in loops {
                guard slots.count < max(1, maxConnections) else { break outer }
                slotsOfLoop[ObjectIdentifier(loop), default: []].append(slots.count)
                slots.append(Slot(eventLoop: loop, backoff: backoff))
            }
        }
        self.slots = slots
        self.slotsOfLoop = slotsOfLoop
    }

    /// The slot for a command sent now: one of the current loop's, or the next in turn.
    func slot() -> Slot {
        let turn = turn.wrappingAdd(1, ordering: .relaxed).newValue
        if let loop = MultiThreadedEventLoopGroup.currentEventLoop, let own = slotsOfLoop[ObjectIdentifier(loop)] {
            return slots[own.count == 1 ? own[0] : own[turn % own.count]]
        }
        return slots[turn % slots.count]
    }

    /// The open connection of the current event loop, when this thread is one of the client's loops and its
    /// connection is open: a command written on it now needs no task, and its reply comes back on this thread.
    func openConnectionOfCurrentLoop() -> RESPConnection? {
        guard let loop = MultiThreadedEventLoopGroup.currentEventLoop, let own = slotsOfLoop[ObjectIdentifier(loop)] else { return nil }
        let index = own.count == 1 ? own[0] : own[turn.wrappingAdd(1, ordering: .relaxed).newValue % own.count]
        return slots[index].state.withLock { $0.openConnection }
    }

    /// The open connection of `slot`, opening it (through `client`, once, however many commands wait for it) when
    /// it has none.
    func connection(in slot: Slot, of client: RESPClient) async throws -> RESPConnection {
        let decision = slot.state.withLock { state in
            state.next(now: .now) {
                // Not the caller's task: a caller that is cancelled must not abort the connection others wait for.
                Task { try await self.connect(slot, of: client) }
            }
        }
        switch decision {
        case .ready(let connection): return connection
        case .failed(let error): throw error
        case .opening(let attempt): return try await Self.value(of: attempt)
        }
    }

    /// The attempt's connection; a cancelled caller stops waiting at once, and the attempt goes on for the others.
    private static func value(of attempt: Task<RESPConnection, any Error>) async throws -> RESPConnection {
        let waiter = AttemptWaiter()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard waiter.wait(continuation) else { return continuation.resume(throwing: CancellationError()) }
                Task {
                    let result = await attempt.result
                    waiter.take()?.resume(with: result)
                }
            }
        } onCancel: {
            waiter.take()?.resume(throwing: CancellationError())
        }
    }

    /// One caller's wait for a connection attempt: resumed once, by the attempt's end or the caller's cancellation.
    private final class AttemptWaiter: Sendable {
        private enum Wait {
            case pending
            case waiting(CheckedContinuation<RESPConnection, any Error>)
            case done
        }

        private let state = Mutex(Wait.pending)

        /// Keeps `continuation`; false when the caller was cancelled already.
        func wait(_ continuation: CheckedContinuation<RESPConnection, any Error>) -> Bool {
            state.withLock { state in
                guard case .pending = state else { return false }
                state = .waiting(continuation)
                return true
            }
        }

        /// The continuation to resume, the first time only.
        func take() -> CheckedContinuation<RESPConnection, any Error>? {
            state.withLock { state in
                defer { state = .done }
                guard case .waiting(let continuation) = state else { return nil }
                return continuation
            }
        }
    }

    private func connect(_ slot: Slot, of client: RESPClient) async throws -> RESPConnection {
        let connection: RESPConnection
        do {
            connection = try await client.openConnection(on: slot.eventLoop)
        } catch {
            let reason = (error as? RESPError).map { "\($0)" } ?? "\(error)"
            let delay = slot.state.withLock { $0.connectFailed(reason: reason, now: .now) }
            client.logger.warning(
                "Redis connection failed", metadata: ["server": "\(client.configuration)", "error": "\(reason)", "retry_in": "\(delay)"])
            throw (error as? RESPError) ?? .unavailable(reason: reason)
        }
        let (keep, failures) = slot.state.withLock { $0.connected(connection) }
        guard keep else {
            await connection.close()
            throw RESPError.shutdown
        }
        if failures > 0 {
            client.logger.info("Redis connection restored", metadata: ["server": "\(client.configuration)"])
            // The server is back: the other slots need not wait out their backoffs to find out.
            for other in slots where other !== slot { other.state.withLock { $0.clearBackoff() } }
        }
        return connection
    }

    /// The server moved: returns the open connections to close (commands in flight on them fail), and clears the
    /// backoffs.
    func forgetServer() -> [RESPConnection] {
        slots.compactMap { slot in slot.state.withLock { $0.forgetServer() } }
    }

    /// Refuses new commands, closes every connection, and returns once no connection attempt is under way.
    func shutdown() async {
        for slot in slots {
            let (connection, attempt) = slot.state.withLock { $0.shutdown() }
            _ = try? await attempt?.value  // closes what it opened, finding the slot shut down
            await connection?.close()
        }
    }
}

/// One shared connection's bookkeeping, behind its slot's lock: pure decisions, no I/O.
struct RESPSharedSlotState {
    enum Decision {
        case ready(RESPConnection)
        case opening(Task<RESPConnection, any Error>)
        case failed(RESPError)
    }

    private enum Phase {
        case closed
        case opening(Task<RESPConnection, any Error>)
        case open(RESPConnection)
        case shutdown
    }

    let backoff: RESPConfiguration.Backoff
    private var phase = Phase.closed
    private var consecutiveFailures = 0
    private var retryAfter: ContinuousClock.Instant?
    private var lastFailure = ""

    init(backoff: RESPConfiguration.Backoff) {
        self.backoff = backoff
    }

    /// What a command does now: use the open connection, wait for the attempt under way (`startAttempt` starts
    /// one when there is none and no backoff is running), or fail.
    mutating func next(now: ContinuousClock.Instant, startAttempt: () -> Task<RESPConnection, any Error>) -> Decision {
        switch phase {
        case .shutdown:
            return .failed(.shutdown)
        case .opening(let attempt):
            return .opening(attempt)
        case .open(let connection) where connection.isActive:
            return .ready(connection)
        case .open, .closed:
            if let retryAfter, now < retryAfter { return .failed(.unavailable(reason: lastFailure)) }
            let attempt = startAttempt()
            phase = .opening(attempt)
            return .opening(attempt)
        }
    }

    /// The connection, when it is open.
    var openConnection: RESPConnection? {
        guard case .open(let connection) = phase, connection.isActive else { return nil }
        return connection
    }

    /// The attempt succeeded; false when the slot shut down meanwhile (the caller closes the connection).
    mutating func connected(_ connection: RESPConnection) -> (keep: Bool, afterFailures: Int) {
        let failures = consecutiveFailures
        consecutiveFailures = 0
        retryAfter = nil
        guard case .opening = phase else { return (false, failures) }
        phase = .open(connection)
        return (true, failures)
    }

    /// The attempt failed: no new one before the returned wait is over.
    mutating func connectFailed(reason: String, now: ContinuousClock.Instant) -> Duration {
        consecutiveFailures += 1
        lastFailure = reason
        let delay = backoff.delay(afterFailures: consecutiveFailures)
        retryAfter = now + delay
        if case .opening = phase { phase = .closed }
        return delay
    }

    /// The next command may try to connect at once.
    mutating func clearBackoff() {
        consecutiveFailures = 0
        retryAfter = nil
    }

    /// The server moved: the connection to close, if one is open; no backoff.
    mutating func forgetServer() -> RESPConnection? {
        clearBackoff()
        guard case .open(let connection) = phase else { return nil }
        phase = .closed
        return connection
    }

    /// Marks the slot shut down; returns its connection to close, or the attempt under way to wait for.
    mutating func shutdown() -> (connection: RESPConnection?, attempt: Task<RESPConnection, any Error>?) {
        defer { phase = .shutdown }
        switch phase {
        case .open(let connection): return (connection, nil)
        case .opening(let attempt): return (nil, attempt)
        case .closed, .shutdown: return (nil, nil)
        }
    }
}
