import Logging
import NIOCore

/// The read timeout of one connection: a request must arrive whole, headers and body, within `timeout` of its
/// first byte.
///
/// Hummingbird's idle timeout restarts with every HTTP part it reads, so a body sent a byte at a time never trips
/// it, and headers dribbled slowly hold a connection for the whole idle time. This deadline starts when the
/// first bytes of a request arrive (``RequestStartHandler``, before the decoder) or its head is decoded (a
/// pipelined request), and ends with the request's `end` (``HTTP1RequestGuard``, after the decoder).
///
/// Cheap per request: a clock read when a request starts and a store when it ends. At most one timer is pending;
/// when it fires for a request that has since ended it is simply not renewed, and one still being read sets it
/// again for that request's own deadline, so a busy keep-alive connection schedules about one timer per timeout.
///
/// Shared by two handlers of one pipeline and only used on that channel's event loop.
final class RequestReadDeadline {
    let timeout: TimeAmount
    private let logger: Logger
    private var startedAt: NIODeadline?
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount, logger: Logger) {
        self.timeout = timeout
        self.logger = logger
    }

    /// A request's first bytes (or its head) arrived; nothing changes while one is already being read.
    func begin(_ context: ChannelHandlerContext) {
        guard startedAt == nil else { return }
        let now = NIODeadline.now()
        startedAt = now
        if timer == nil { schedule(at: now + timeout, context) }
    }

    /// The request's last part arrived.
    func end() {
        startedAt = nil
    }

    /// The connection is gone.
    func cancel() {
        timer?.cancel()
        timer = nil
        startedAt = nil
    }

    private func schedule(at deadline: NIODeadline, _ context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.fire(context)
        }
    }

    private func fire(_ context: ChannelHandlerContext) {
        timer = nil
        guard let startedAt else { return }
        let due = startedAt + timeout
        guard NIODeadline.now() >= due else {
            schedule(at: due, context)
            return
        }
        logger.debug(
            "closing a connection: its request did not arrive within the read timeout",
            metadata: ["peer": "\(context.channel.remoteAddress?.ipAddress ?? "unknown")", "timeout_ms": "\(timeout.nanoseconds / 1_000_000)"])
        self.startedAt = nil
        context.close(promise: nil)
    }
}

/// First in the pipeline, on raw bytes: starts the read deadline when a request's first bytes arrive.
final class RequestStartHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let deadline: RequestReadDeadline

    init(deadline: RequestReadDeadline) {
        self.deadline = deadline
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        deadline.begin(context)
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline.cancel()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline.cancel()
    }
}
