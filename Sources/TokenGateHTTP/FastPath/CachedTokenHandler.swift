import HTTPTypes
import NIOCore
import NIOHTTPTypes
import TokenGateCore

/// Answers cached tokens on the connection's event loop, in front of Hummingbird's request loop, and hands
/// everything else on to that loop unchanged.
///
/// A GET of the token route is held from its head to its end; then ``CachedTokenResponder`` answers it, or the
/// request goes on as it came. Answers leave in request order: while a request handed on is unanswered, every
/// later one is handed on too, and a request that arrives with a body, or while the connection cannot take more
/// output, is handed on (the router's writer waits for the client; this handler would only buffer). Placed after
/// Hummingbird's `HTTPConnectionStateHandler`, which sees these requests and answers like any other: its idle
/// timeout and graceful shutdown work unchanged.
final class CachedTokenHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let responder: CachedTokenResponder
    private var date = HTTPDate()
    /// A token request whose end has not arrived yet, and its target.
    private var held: (request: HTTPRequest, route: TokenRouteTarget)?
    /// Requests handed on whose answer has not been written completely.
    private var unanswered = 0
    private var needsFlush = false

    init(responder: CachedTokenResponder) {
        self.responder = responder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            if unanswered == 0, let route = responder.route(of: request) {
                held = (request, route)
                return
            }
            handOn(.head(request), context: context)
        case .body:
            if let (request, _) = held.take() {
                handOn(.head(request), context: context)
            }
            context.fireChannelRead(data)
        case .end(let trailers):
            if let (request, route) = held.take() {
                if trailers == nil, context.channel.isWritable,
                    case .response(let response, let body) = responder.answer(
                        request, route: route, peer: PeerAddress(context.channel.remoteAddress), date: date.now())
                {
                    context.write(wrapOutboundOut(.head(response)), promise: nil)
                    context.write(wrapOutboundOut(.body(body)), promise: nil)
                    context.write(wrapOutboundOut(.end(nil)), promise: nil)
                    needsFlush = true
                    return
                }
                handOn(.head(request), context: context)
            }
            context.fireChannelRead(data)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // One flush per batch of reads: pipelined requests' answers leave together.
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), unanswered > 0 { unanswered -= 1 }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A parse error ends the connection: Hummingbird answers it; a held request is never answered.
        held = nil
        context.fireErrorCaught(error)
    }

    private func handOn(_ head: HTTPRequestPart, context: ChannelHandlerContext) {
        unanswered += 1
        context.fireChannelRead(wrapInboundOut(head))
    }
}

@available(*, unavailable)
extension CachedTokenHandler: Sendable {}
