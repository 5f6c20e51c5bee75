import HTTPTypes
import NIOCore
import NIOHTTP1
import TokenGateCore
import Tracing

/// Answers token requests from the connection's event loop, in front of Hummingbird's request loop, and hands
/// everything else on to that loop unchanged.
///
/// A GET of the token route is held from its head to its end; then the ``TokenEndpoint`` answers it at once (a
/// cached token, a refusal), or it is fetched from the service's full path and written when it comes (a miss: a
/// mint costs no request task, and is signed on this event loop), or it goes on as it came (a browser's request and
/// its CORS fields, a `Connection: close`: the router's to shape; nothing was charged).
/// Answers leave in request order: while a request handed on is unanswered, every later one is handed on too;
/// while a fetch is under way, requests read wait here, and once one does, nothing more is read from the socket.
/// A request that arrives with a body, or while the connection cannot take more output, is handed on (the router's
/// writer waits for the client; this handler would only buffer). It works on NIO's HTTP/1 parts, before the
/// HTTPTypes conversion and Hummingbird's handlers, so a cached hit costs neither. ``HTTP1ConnectionStateHandler``,
/// before it, sees these requests and answers like any other: the idle timeout and graceful shutdown hold for both.
///
/// In a traced gateway each request's sampling is decided here, first (``TraceSampler``): a sampled one goes to the
/// router, which traces it, and an unsampled token request is answered here like any other, with no span.
final class EventLoopTokenHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let endpoint: TokenEndpoint
    /// The `Server` header's value, as the application sends it.
    private let serverName: String
    /// A traced gateway's sampling, and the tracer that reads a caller's `traceparent` for an unsampled mint's calls.
    struct Tracing: Sendable {
        let sampler: TraceSampler
        let tracer: any Tracer
    }

    // Apart, not as a `Tracing?`: every request reads the sampler, and an optional class reference is copied for free.
    private let sampler: TraceSampler?
    private let tracer: (any Tracer)?
    private var date = HTTPDate()
    /// Where cached tokens' bodies are written: reused once the last one has been sent (no allocation per answer).
    private var body = ByteBuffer()
    /// A token request whose end has not arrived yet, and its target.
    private var held: (request: HTTPRequestHead, route: TokenRouteTarget)?
    /// Requests handed on whose answer has not been written completely.
    private var unanswered = 0
    /// A flush of this connection's answers is queued for the end of the event loop's turn.
    private var flushQueued = false
    /// A fetch is under way: later parts wait in `waiting`, and a read asked for meanwhile in `readDeferred`.
    private var fetching = false
    private var waiting: [HTTPServerRequestPart] = []
    /// An HTTP error (a malformed request after the one being fetched) that waits, like the parts, for the answers
    /// before it: passed on, it makes Hummingbird answer 400 and close, which would lose the fetched answer.
    private var waitingError: (any Error)?
    private var readDeferred = false
    private var isActive = true
    /// Where this connection's fetches run: its event loop. Made at the first miss.
    private var loopExecutor: EventLoopTaskExecutor?

    private let addressing: ClientAddressing
    private let origin: ConnectionOrigin?

    init(
        endpoint: TokenEndpoint, serverName: String, tracing: Tracing? = nil,
        addressing: ClientAddressing = ClientAddressing(trustedProxies: nil), origin: ConnectionOrigin? = nil
    ) {
        self.endpoint = endpoint
        self.serverName = serverName
        sampler = tracing?.sampler
        tracer = tracing?.tracer
        self.addressing = addressing
        self.origin = origin
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if fetching {
            waiting.append(part)
            return
        }
        process(part, context: context)
    }

    private func process(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch part {
        case .head(let request):
            // A GET of the token route's plain path may be the endpoint's; every other request is passed on at once
            // (its body streams to the router), and so is a sampled one (the router traces it).
            let sampled = sampler?.isSampled(traceparent: RequestFields.traceparent(of: request.headers))
            if unanswered == 0, sampled != true, request.method == .GET, let route = TokenRouteTarget(request.uri) {
                held = (request, route)
                return
            }
            handOn(request, sampled: sampled, context: context)
        case .body:
            if let (request, _) = held.take() {
                handOn(request, sampled: sampler == nil ? nil : false, context: context)
            }
            context.fireChannelRead(wrapInboundOut(part))
        case .end(let trailers):
            if let (request, route) = held.take() {
                if trailers == nil, context.channel.isWritable {
                    let peer = ClientAddressing.connectionPeer(of: context.channel, origin: origin)
                    let client = addressing.client(peer: peer, headers: request.headers)
                    switch endpoint.answer(route, fields: RequestFields(request.headers), peer: client, body: &self.body) {
                    case .answer(let answer, let requestID):
                        write(answer, requestID: requestID, context: context)
                        return
                    case .later(let admission):
                        fetch(admission, trace: tracer.map { Self.unsampledTrace(of: request.headers, tracer: $0) }, context: context)
                        return
                    case .notMine:
                        break
                    }
                }
                handOn(request, sampled: sampler == nil ? nil : false, context: context)
            }
            context.fireChannelRead(wrapInboundOut(part))
        }
    }

    private func write(_ answer: TokenAnswer, requestID: String, context: ChannelHandlerContext) {
        let head = answer.head(requestID: requestID, date: date.now(), server: serverName)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(answer.body))), promise: nil)
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
        flushAtEndOfTurn(context: context)
    }

    /// Answers leave when the event loop has read every connection that was ready, not as each one is written: the
    /// loop's turn reads them all, then the queued flushes write each connection's answers, back to back. A client
    /// on the same host (a sidecar, a proxy, the load generator) is then woken about once per turn rather than once
    /// per answer, and on loopback that wake-up is the sender's CPU: 15 % of a cached hit's in a profile, a third
    /// of a hit's CPU saved in paired runs, with lower latency under load. Pipelined answers of one connection
    /// still leave in one write; an answer waits at most for the other requests of its turn.
    private func flushAtEndOfTurn(context: ChannelHandlerContext) {
        guard !flushQueued else { return }
        flushQueued = true
        context.eventLoop.assumeIsolated().execute {
            self.flushQueued = false
            // A connection closed meanwhile: its context no longer leads anywhere, and this does nothing.
            context.flush()
        }
    }

    /// An unsampled request's context for its full path: the decision, for every step, and the caller's
    /// `traceparent`, for every call out.
    private static func unsampledTrace(of headers: HTTPHeaders, tracer: any Tracer) -> ServiceContext {
        var trace = ServiceContext.topLevel
        trace.traceSampled = false
        tracer.extract(headers, into: &trace, using: HTTPHeadersExtractor())
        return trace
    }

    /// Runs the rest of the service's full path for `admission` and writes its answer, then reads on: without a task
    /// when only the shared limits' check stands between the request and a cached token (the store is asked from
    /// this event loop, and answers on it), in a task on this connection's event loop otherwise (a mint it starts
    /// runs there too). In a traced gateway that task runs in `trace`, the unsampled request's context.
    private func fetch(_ admission: TokenAdmission, trace: ServiceContext?, context: ChannelHandlerContext) {
        fetching = true
        let (endpoint, requestID) = (endpoint, admission.requestID ?? "")
        let loop = context.eventLoop
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
        // Called once, on this loop (a store's reply, the task) or from elsewhere (then hopping here).
        let answer: @Sendable (TokenAnswer) -> Void = { fetched in
            guard loop.inEventLoop else {
                return loop.execute { bound.value.handler.answered(fetched, requestID: requestID, context: bound.value.context) }
            }
            bound.value.handler.answered(fetched, requestID: requestID, context: bound.value.context)
        }
        if !endpoint.finish(admission, completion: answer) {
            let executor = loopExecutor ?? EventLoopTaskExecutor(loop)
            loopExecutor = executor
            TokenCacheFetches.$executor.withValue(executor) {
                ServiceContext.$current.withValue(trace) {
                    Task(executorPreference: executor) { answer(await endpoint.finish(admission)) }
                }
            }
        }
    }

    /// Writes a fetch's answer, then reads on.
    private func answered(_ fetched: TokenAnswer, requestID: String, context: ChannelHandlerContext) {
        fetching = false
        // A connection closed meanwhile: the token is cached all the same, and nobody is left to answer.
        guard isActive else { return }
        write(fetched, requestID: requestID, context: context)
        readWaiting(context: context)
    }

    /// The parts read while a fetch was under way, in order (until one of them starts a fetch of its own), then
    /// the read that was deferred.
    private func readWaiting(context: ChannelHandlerContext) {
        // The read-complete that went by while the parts waited is passed on again after them (the router's stream
        // hands on what it was given at a read-complete); without parts there is nothing to complete.
        let hadParts = !waiting.isEmpty
        while !fetching, !waiting.isEmpty {
            process(waiting.removeFirst(), context: context)
        }
        if !fetching, let error = waitingError.take() {
            held = nil
            context.fireErrorCaught(error)
        }
        if hadParts { context.fireChannelReadComplete() }
        if !fetching, readDeferred {
            readDeferred = false
            context.read()
        }
    }

    /// Reads on during a fetch until a request arrives behind it: a client that waits for each answer (most do) then
    /// costs no change of the socket's interest in reads (two `epoll_ctl` calls a fetch), and a pipelining one has
    /// at most one read's worth of requests held here.
    func read(context: ChannelHandlerContext) {
        if fetching, !waiting.isEmpty {
            readDeferred = true
        } else {
            context.read()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        isActive = false
        waiting = []
        waitingError = nil
        context.fireChannelInactive()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), unanswered > 0 { unanswered -= 1 }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Behind a fetch the error waits its turn (the requests read before it are answered first).
        if fetching {
            waitingError = waitingError ?? error
            return
        }
        // A parse error ends the connection: Hummingbird answers it; a held request is never answered.
        held = nil
        context.fireErrorCaught(error)
    }

    /// Passes `request` on to the router; in a traced gateway with its sampling decision (`sampled`) in
    /// `TokenGate-Trace-Sampled`, replacing any a client sent.
    private func handOn(_ request: HTTPRequestHead, sampled: Bool?, context: ChannelHandlerContext) {
        var request = request
        if let sampled { request.headers.replaceOrAdd(name: HTTPField.Name.traceDecision.rawName, value: sampled ? "1" : "0") }
        unanswered += 1
        context.fireChannelRead(wrapInboundOut(.head(request)))
    }
}

@available(*, unavailable)
extension EventLoopTokenHandler: Sendable {}

/// Reads a propagated context (`traceparent`, `tracestate`) from an HTTP/1 request's header fields.
private struct HTTPHeadersExtractor: Extractor {
    func extract(key: String, from headers: HTTPHeaders) -> String? {
        headers.first(name: key)
    }
}
