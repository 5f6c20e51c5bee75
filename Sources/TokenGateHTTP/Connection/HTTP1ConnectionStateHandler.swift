import NIOCore
import NIOHTTP1

/// A connection's idle timeout and graceful close, on HTTP/1 parts: Hummingbird's `HTTPConnectionStateHandler`
/// (the same rules), placed before the HTTPTypes conversion so that it sees every request and answer, the ones the
/// fast path answers on the event loop as well as the router's.
///
/// - A connection with no request in progress closes once `idleTimeout` has passed since its last request part or
///   finished answer. A request being answered is never idle; one still being read is, once its last part is old.
/// - `ChannelShouldQuiesceEvent` (a graceful shutdown) closes an idle connection at once, and a busy one right
///   after the answer that leaves it with none in progress.
final class HTTP1ConnectionStateHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let idleTimeout: TimeAmount
    private var requestsInProgress = 0
    private var isRequestBeingRead = false
    /// When the last request part was read or the last answer finished (the loop's clock).
    private var lastActive = NIODeadline.uptimeNanoseconds(0)
    private var isActive = false
    private var closeAfterAnswer = false
    private var idleCheck: Scheduled<Void>?

    init(idleTimeout: TimeAmount) {
        self.idleTimeout = idleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { becameActive(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        idleCheck = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        becameActive(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        isActive = false
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastActive = context.eventLoop.now
        switch unwrapInboundIn(data) {
        case .head:
            isRequestBeingRead = true
            requestsInProgress += 1
        case .body:
            break
        case .end:
            isRequestBeingRead = false
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else { return context.write(data, promise: promise) }
        requestsInProgress -= 1
        guard requestsInProgress == 0 else { return context.write(data, promise: promise) }
        if closeAfterAnswer {
            context.writeAndFlush(data, promise: promise)
            context.close(promise: nil)
            return
        }
        if isActive {
            lastActive = context.eventLoop.now
            scheduleIdleCheck(at: lastActive + idleTimeout, context: context)
        }
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else { return context.fireUserInboundEventTriggered(event) }
        if requestsInProgress > 0 {
            closeAfterAnswer = true
        } else {
            context.close(promise: nil)
        }
    }

    private func becameActive(context: ChannelHandlerContext) {
        isActive = true
        lastActive = context.eventLoop.now
        scheduleIdleCheck(at: lastActive + idleTimeout, context: context)
    }

    /// One check at a time: a later deadline is found when the check runs and reschedules itself.
    private func scheduleIdleCheck(at deadline: NIODeadline, context: ChannelHandlerContext) {
        guard idleCheck == nil else { return }
        idleCheck = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            idleCheck = nil
            guard isActive else { return }
            // Answering a request that has been read whole: not idle; the answer's end schedules the next check.
            if !isRequestBeingRead, requestsInProgress > 0 { return }
            let idleUntil = lastActive + idleTimeout
            if context.eventLoop.now >= idleUntil {
                context.close(promise: nil)
            } else {
                scheduleIdleCheck(at: idleUntil, context: context)
            }
        }
    }
}

@available(*, unavailable)
extension HTTP1ConnectionStateHandler: Sendable {}
