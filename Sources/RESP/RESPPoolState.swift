/// The pool's bookkeeping, kept behind the client's lock: pure decisions, no I/O, so that every path through it is
/// short and the caller does the waiting, connecting and closing outside the lock.
struct RESPPoolState {
    /// What a caller asking for a connection gets.
    enum Grant: Sendable {
        /// An open connection, leased to the caller until it is released.
        case connection(RESPConnection)
        /// A free slot: the caller opens a connection and reports how it went.
        case connect
        /// The pool changed (a slot freed up, a connection attempt failed): ask again.
        case retry
    }

    /// What ``lease(id:continuation:now:)`` decided.
    enum LeaseDecision {
        case granted(Grant)
        case failed(RESPError)
        case enqueued
    }

    typealias Waiter = (id: Int, continuation: CheckedContinuation<Grant, any Error>)

    let maxConnections: Int
    let maxWaiters: Int
    let backoff: RESPConfiguration.Backoff
    private(set) var isShutdown = false
    private var idle: [RESPConnection] = []
    private var open: [ObjectIdentifier: RESPConnection] = [:]
    private var opening = 0
    private var waiters: [Waiter] = []
    private var consecutiveFailures = 0
    private var retryAfter: ContinuousClock.Instant?
    private var lastFailure = ""
    private var drained: CheckedContinuation<Void, Never>?

    init(maxConnections: Int, maxWaiters: Int, backoff: RESPConfiguration.Backoff) {
        self.maxConnections = maxConnections
        self.maxWaiters = maxWaiters
        self.backoff = backoff
    }

    mutating func lease(id: Int, continuation: CheckedContinuation<Grant, any Error>, now: ContinuousClock.Instant)
        -> LeaseDecision
    {
        guard !isShutdown else { return .failed(.shutdown) }
        while let connection = idle.popLast() {
            if connection.isActive { return .granted(.connection(connection)) }
            open[ObjectIdentifier(connection)] = nil  // closed while idle (server restart, CLIENT KILL)
        }
        if opening + open.count < maxConnections {
            if let retryAfter, now < retryAfter { return .failed(.unavailable(reason: lastFailure)) }
            opening += 1
            return .granted(.connect)
        }
        guard waiters.count < maxWaiters else { return .failed(.poolExhausted) }
        waiters.append((id, continuation))
        return .enqueued
    }

    /// Takes waiter `id` out of the queue, if it is still there, to be failed (its lease timed out or was cancelled).
    mutating func removeWaiter(id: Int) -> Waiter? {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
        return waiters.remove(at: index)
    }

    /// A connection attempt succeeded. Returns false when the pool shut down meanwhile: the caller closes it.
    mutating func connected(_ connection: RESPConnection) -> (keep: Bool, afterFailures: Int) {
        opening -= 1
        let failures = consecutiveFailures
        consecutiveFailures = 0
        retryAfter = nil
        defer { resumeDrainedIfIdle() }
        guard !isShutdown else { return (false, failures) }
        open[ObjectIdentifier(connection)] = connection
        return (true, failures)
    }

    /// A connection attempt failed: no new attempt before the returned wait is over; every waiter asks again.
    mutating func connectFailed(reason: String, now: ContinuousClock.Instant) -> (delay: Duration, waiters: [Waiter]) {
        opening -= 1
        consecutiveFailures += 1
        lastFailure = reason
        let delay = backoff.delay(afterFailures: consecutiveFailures)
        retryAfter = now + delay
        defer { resumeDrainedIfIdle() }
        return (delay, takeWaiters())
    }

    /// A connection attempt was cancelled by its caller: the slot is free again, and nothing is known of the server.
    mutating func connectAbandoned() -> [Waiter] {
        opening -= 1
        defer { resumeDrainedIfIdle() }
        return takeWaiters()
    }

    /// A leased connection comes back. Returns the waiter it goes to, or, if it is closed, the waiters that may now
    /// open one; `close` when the pool shut down.
    mutating func release(_ connection: RESPConnection) -> (handTo: Waiter?, retry: [Waiter], close: Bool) {
        guard !isShutdown else { return (nil, [], true) }
        guard connection.isActive else {
            open[ObjectIdentifier(connection)] = nil
            return (nil, takeWaiters(), false)
        }
        if !waiters.isEmpty { return (waiters.removeFirst(), [], false) }
        idle.append(connection)
        return (nil, [], false)
    }

    /// The server moved: returns the idle connections to close, and clears the backoff.
    mutating func forgetServer() -> [RESPConnection] {
        consecutiveFailures = 0
        retryAfter = nil
        defer { idle = [] }
        for connection in idle { open[ObjectIdentifier(connection)] = nil }
        return idle
    }

    /// Marks the pool shut down; returns every connection to close and every waiter to fail.
    mutating func shutdown() -> (connections: [RESPConnection], waiters: [Waiter]) {
        isShutdown = true
        let connections = Array(open.values)
        open = [:]
        idle = []
        return (connections, takeWaiters())
    }

    /// Registers the continuation to resume once no connection attempt is under way; false if none is now.
    mutating func waitUntilDrained(_ continuation: CheckedContinuation<Void, Never>) -> Bool {
        guard opening > 0 else { return false }
        drained = continuation
        return true
    }

    private mutating func resumeDrainedIfIdle() {
        if opening == 0, let drained {
            self.drained = nil
            drained.resume()
        }
    }

    private mutating func takeWaiters() -> [Waiter] {
        defer { waiters = [] }
        return waiters
    }
}

extension RESPConfiguration.Backoff {
    /// The wait after `failures` consecutive failed attempts: `initial` doubled per failure up to `maximum`, then a
    /// random point in its upper half.
    func delay(afterFailures failures: Int) -> Duration {
        let doubled = initial * (1 << min(max(failures - 1, 0), 30))
        let ceiling = min(doubled, maximum)
        return ceiling / 2 + ceiling / 2 * Double.random(in: 0...1)
    }
}
