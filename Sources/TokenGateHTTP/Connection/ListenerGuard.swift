import Logging
import Metrics
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// First on the listening socket's pipeline: caps open connections and reports accept failures.
///
/// - **Connection cap.** Hummingbird's `availableConnectionsDelegate` stops accepting at its limit, which leaves
///   new clients waiting in the kernel's listen queue until they time out. Here a connection past
///   `maxConnections` is closed as soon as it is accepted, before any handler or read: the client sees the
///   connection end at once and can go elsewhere. Each one is counted (`tokengate_connections_refused_total`)
///   and logged, at most one line per ten seconds carrying the count since the last.
/// - **Out of file descriptors.** When `accept(2)` fails with `EMFILE` or `ENFILE`, the connection stays in the
///   kernel's backlog and the listening socket stays readable. NIO keeps its read pending after a failed accept, so
///   the socket stays registered with epoll and the accept fails again at once, forever: a busy loop that starved
///   every other connection (NIO's `AcceptBackoffHandler` only delays the *next* read, which never comes). This
///   handler pauses the read instead (which unregisters the socket), for 50 ms doubling up to a second while the
///   failures go on, then resumes; it logs the failure (rate-limited the same way), since an operator must raise
///   `ulimit -n` or lower the cap.
///
/// Hummingbird has no hook into the listening socket's pipeline before it binds, so `GatewayApplication` adds this
/// handler from `onServerRunning`, before it announces the port. Connections accepted in between (a few
/// microseconds after the bind) are not counted; they are served normally.
final class ListenerGuard: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    /// One log line per kind at most this often.
    static let logInterval = TimeAmount.seconds(10)

    /// Which listener a guard stands at: the metrics' `listener` label and the logs' field.
    enum Listener: String {
        case `public`, admin
    }

    private let maxConnections: Int
    private let listener: Listener
    private let logger: Logger
    private let refusals: Counter
    private let acceptFailures: Counter
    private var open = 0
    private var limitLog = RateLimitedLog()
    private var descriptorLog = RateLimitedLog()
    /// The pause after the last failed accept; zero once an accept succeeds.
    private var backoff = TimeAmount.zero
    private var resumption: Scheduled<Void>?

    /// The first pause after a failed accept, and the longest.
    static let firstBackoff = TimeAmount.milliseconds(50)
    static let maxBackoff = TimeAmount.seconds(1)

    init(maxConnections: Int, listener: Listener, logger: Logger) {
        self.maxConnections = maxConnections
        self.listener = listener
        self.logger = logger
        refusals = Counter(label: "tokengate_connections_refused_total", dimensions: [("reason", "limit"), ("listener", listener.rawValue)])
        acceptFailures = Counter(
            label: "tokengate_accept_failures_total", dimensions: [("reason", "file_descriptors"), ("listener", listener.rawValue)])
    }

    /// Adds a guard at the front of `serverChannel`'s pipeline.
    static func install(on serverChannel: any Channel, maxConnections: Int, listener: Listener, logger: Logger) async throws {
        try await serverChannel.eventLoop.submit {
            try serverChannel.pipeline.syncOperations.addHandler(
                ListenerGuard(maxConnections: maxConnections, listener: listener, logger: logger), position: .first)
            // NIO accepts 4 connections per readiness event by default; a burst of thousands of clients (a fleet of
            // apps reconnecting) then waits in the kernel's listen queue and overflows it. Drain it in larger bites.
            try serverChannel.syncOptions?.setOption(.maxMessagesPerRead, value: Self.acceptsPerRead)
        }.get()
    }

    /// Connections accepted per readiness event of the listening socket.
    static let acceptsPerRead: UInt = 256

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let connection = unwrapInboundIn(data)
        guard open < maxConnections else {
            connection.close(promise: nil)
            refusals.increment()
            if let count = limitLog.shouldLog(now: .now(), interval: Self.logInterval) {
                logger.warning(
                    "connection limit reached: closing new connections as they are accepted",
                    metadata: ["listener": "\(listener.rawValue)", "max_connections": "\(maxConnections)", "refused": "\(count)"])
            }
            return
        }
        open += 1
        backoff = .zero
        connection.closeFuture.hop(to: context.eventLoop).assumeIsolated().whenComplete { _ in
            self.open -= 1
            HeapTrim.connectionClosed()
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? IOError, error.errnoCode == EMFILE || error.errnoCode == ENFILE {
            acceptFailures.increment()
            if let count = descriptorLog.shouldLog(now: .now(), interval: Self.logInterval) {
                logger.error(
                    "cannot accept connections: out of file descriptors; raise the limit (ulimit -n) or lower server.maxConnections",
                    metadata: [
                        "listener": "\(listener.rawValue)", "errno": "\(error.errnoCode == EMFILE ? "EMFILE" : "ENFILE")", "failures": "\(count)",
                        "open_connections": "\(open)",
                    ])
            }
            pauseAccepting(context: context)
        }
        context.fireErrorCaught(error)
    }

    /// Stops accepting for the back-off, then resumes. Switching `autoRead` on and off makes NIO pause the read it
    /// still has pending, which unregisters the socket from epoll; resuming restores `autoRead` (or, off, asks for
    /// one read as the server's async sequence would).
    private func pauseAccepting(context: ChannelHandlerContext) {
        guard resumption == nil, let options = context.channel.syncOptions else { return }
        backoff = backoff == .zero ? Self.firstBackoff : min(backoff * 2, Self.maxBackoff)
        let autoRead = (try? options.getOption(.autoRead)) ?? false
        try? options.setOption(.autoRead, value: true)
        try? options.setOption(.autoRead, value: false)
        resumption = context.eventLoop.assumeIsolated().scheduleTask(in: backoff) {
            self.resumption = nil
            if autoRead { try? context.channel.syncOptions?.setOption(.autoRead, value: true) } else { context.read() }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        resumption?.cancel()
        resumption = nil
    }
}

/// The first event logs at once; later ones within the interval are only counted, and the next line carries the
/// count.
struct RateLimitedLog {
    private var lastLogged: NIODeadline?
    private var pending = 0

    /// The number of events to report now (this one included), or `nil` to stay quiet.
    mutating func shouldLog(now: NIODeadline, interval: TimeAmount) -> Int? {
        pending += 1
        if let lastLogged, now - lastLogged < interval { return nil }
        lastLogged = now
        defer { pending = 0 }
        return pending
    }
}
