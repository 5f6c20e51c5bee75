import NIOCore
import NIOTLS
import Synchronization

/// Whether a connection still takes new commands, readable from any thread: its handler retires it the moment a
/// command misses its deadline, before that command's caller is told, because the caller may pick a connection
/// for its next command at once on another thread while the channel is still closing.
final class RESPConnectionRetirement: Sendable {
    private let retired = Atomic(false)

    var isRetired: Bool { retired.load(ordering: .acquiring) }

    func retire() { retired.store(true, ordering: .releasing) }
}

/// What a connection hands its channel: a command and, unless nothing answers it, where its reply goes and by when.
struct RESPRequest: Sendable {
    var command: RESPCommand
    var reply: EventLoopPromise<RESPValue>?
    var deadline: NIODeadline?
}

/// Writes commands and matches replies to them in order (the server answers a connection's commands in the order
/// it reads them), so any number may be in flight. Runs on its channel's event loop only.
///
/// Values that answer no command are pushes: RESP3's `>` frames, or, on a subscriber connection, RESP2's pub/sub
/// arrays. They go to `pushes` when the connection has one and are dropped otherwise.
final class RESPChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = RESPRequest
    typealias OutboundOut = ByteBuffer

    private struct Pending {
        /// The command's name as sent, made readable only for a timeout's error.
        let command: ByteBuffer
        let reply: EventLoopPromise<RESPValue>
        let deadline: NIODeadline?
    }

    private var pending = CircularBuffer<Pending>()
    private let processor: NIOSingleStepByteToMessageProcessor<RESPDecoder>
    private let pushes: AsyncStream<RESPValue>.Continuation?
    /// Succeeded when TLS is up, failed with the reason when the connection fails first; nil without TLS.
    private let tlsEstablished: EventLoopPromise<Void>?
    private let retirement: RESPConnectionRetirement
    private var context: ChannelHandlerContext?
    /// Set once the channel is going away; every pending and later command fails with it.
    private var failure: RESPError?
    /// Whether a flush is queued on the loop already.
    private var flushQueued = false
    /// One timer for every command's deadline, not one per command (at tens of thousands of commands a second, the
    /// scheduling and cancelling is what a timer would cost): due at the earliest deadline known when it was set.
    private var deadlineCheck: (at: NIODeadline, task: Scheduled<Void>)?

    init(
        limits: RESPDecoder.Limits, pushes: AsyncStream<RESPValue>.Continuation?,
        tlsEstablished: EventLoopPromise<Void>?, retirement: RESPConnectionRetirement
    ) {
        self.processor = NIOSingleStepByteToMessageProcessor(RESPDecoder(limits: limits))
        self.pushes = pushes
        self.tlsEstablished = tlsEstablished
        self.retirement = retirement
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        fail(with: .connectionClosed, close: false)
        self.context = nil
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        if let failure {
            request.reply?.fail(failure)
            promise?.fail(failure)
            return
        }
        if let reply = request.reply {
            pending.append(Pending(command: request.command.arguments[0], reply: reply, deadline: request.deadline))
            if let deadline = request.deadline, deadline < deadlineCheck?.at ?? .distantFuture { checkDeadlines(at: deadline) }
        }
        var buffer = context.channel.allocator.buffer(capacity: request.command.encodedSizeEstimate)
        request.command.encode(into: &buffer)
        context.write(wrapOutboundOut(buffer), promise: promise)
    }

    /// Flushes once the loop has run what is queued on it now, not at once: the commands that requests handled in
    /// the same turn of the loop write meanwhile leave in the same system call.
    func flush(context: ChannelHandlerContext) {
        guard !flushQueued else { return }
        flushQueued = true
        context.eventLoop.assumeIsolated().execute { [self] in
            flushQueued = false
            self.context?.flush()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard failure == nil else { return }  // closing: nothing read now can be matched to a command
        do {
            try processor.process(buffer: unwrapInboundIn(data)) { value in deliver(value) }
        } catch let error as RESPDecodingError {
            fail(with: .protocolViolation(error), close: true)
        } catch {
            fail(with: .connectionFailed("\(error)"), close: true)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(with: .connectionClosed, close: false)
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent { tlsEstablished?.succeed() }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(with: .connectionFailed("\(error)"), close: true)
    }

    private func deliver(_ value: RESPValue) {
        if case .push = value {
            pushes?.yield(value)
            return
        }
        guard let head = pending.popFirst() else {
            // RESP2 pub/sub messages answer no command; anything else unasked means the stream is out of step.
            if let pushes { pushes.yield(value) } else { fail(with: .connectionFailed("a reply to no command"), close: true) }
            return
        }
        if case .error(let message) = value {
            head.reply.fail(RESPError.server(String(buffer: message)))
        } else {
            head.reply.succeed(value)
        }
    }

    /// Sets the deadline check for `deadline`, replacing a later one.
    private func checkDeadlines(at deadline: NIODeadline) {
        deadlineCheck?.task.cancel()
        guard let context else { return }
        let task = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            deadlineCheck = nil
            let now = NIODeadline.now()
            if let index = pending.firstIndex(where: { $0.deadline.map { $0 <= now } ?? false }) {
                timeOut(at: index)
            } else if let next = pending.lazy.compactMap(\.deadline).min() {
                checkDeadlines(at: next)
            }
        }
        deadlineCheck = (deadline, task)
    }

    /// A command missed its deadline: the connection is retired, then its caller told, then the connection closed
    /// (a late reply would answer the next command). Retired first, so that the caller, which may run at once on
    /// another thread, finds the connection inactive and the pool does not hand it out again; answered before the
    /// close, because closing fails a write not yet flushed, and that failure would answer the command as closed.
    /// The other commands in flight fail with ``RESPError/connectionClosed``.
    private func timeOut(at index: CircularBuffer<Pending>.Index) {
        let entry = pending.remove(at: index)
        retirement.retire()
        entry.reply.fail(RESPError.timeout(command: String(buffer: entry.command).uppercased()))
        fail(with: .connectionClosed, close: true)
    }

    /// Fails every pending command with `error` (the first failure wins) and, if asked, closes the channel first,
    /// so that a caller woken by the failure finds the connection closed.
    private func fail(with error: RESPError, close: Bool) {
        if failure == nil { failure = error }
        let failure = self.failure ?? error
        if close { context?.close(promise: nil) }
        deadlineCheck?.task.cancel()
        deadlineCheck = nil
        while let entry = pending.popFirst() { entry.reply.fail(failure) }
        pushes?.finish()
        tlsEstablished?.fail(failure)  // does nothing once TLS was up
    }
}
