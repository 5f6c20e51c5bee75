import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import TokenGateCore

/// Between the HTTP/1 decoder and the HTTPTypes conversion: refuses requests whose `Host` breaks RFC 9112 §3.2,
/// ends the read deadline with each request, turns Hummingbird's bare answer to a malformed request into
/// TokenGate's JSON error, and keeps a refused client from holding the connection: a body over the listener's cap
/// closes it, and after an error answered while the request's body is still coming (a 401 before the body was read)
/// or after a malformed request, the answer goes out with `Connection: close`, nothing more is read, and the
/// connection is closed a moment later (``linger``), not at the idle timeout.
///
/// Hummingbird answers an `HTTPParserError` (it reaches the request loop in order, after the requests before it)
/// with a bodiless `400` and `Connection: close`, and has no hook to change that answer. Rather than a second
/// request loop, this handler remembers which error went by and rewrites that one answer on its way out: `431
/// request_header_fields_too_large` for a header over the decoder's limit, else `400 bad_request`, each with the
/// JSON body and an `X-Request-ID` (then Hummingbird closes the connection's output). A request with no `Host` (HTTP/1.1), two
/// `Host` fields, or an invalid one is turned into the same kind of error, so it is answered the same way, in
/// order. Nothing is read from the connection after a refusal.
final class HTTP1RequestGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        case open
        /// A malformed request was refused with this code and request ID; its answer is not written yet.
        case refused(TokenGateError.Code, requestID: String)
        /// The answer's head is written; its body goes out with the end. (A code, not the answer: every request
        /// copies the state, and a payload with references would make each copy a call.)
        case answering(TokenGateError.Code)
        case answered
    }

    private let deadline: RequestReadDeadline
    private let logger: Logger
    /// The most body bytes one request may send; past it the connection is closed.
    private let maxBodyBytes: Int
    private var state = State.open
    /// Body bytes of the request being read, or nil while no request's body is coming.
    private var bodyBytes: Int?
    /// An error answer is going out while its request's body was still coming: the connection closes after it.
    private var closesAfterAnswer = false

    /// How long a connection stays after a refusal's answer (its output closed): long enough for the client to read
    /// the answer before a reset could destroy it, short enough that it cannot hold the connection.
    static let linger: TimeAmount = .seconds(1)

    init(deadline: RequestReadDeadline, maxBodyBytes: Int, logger: Logger) {
        self.deadline = deadline
        self.maxBodyBytes = maxBodyBytes
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .open = state, !closesAfterAnswer else { return }
        switch unwrapInboundIn(data) {
        case .head(var head):
            deadline.begin(context)
            bodyBytes = 0
            guard Self.hasValidHost(head) else {
                refuse(.badRequest, context: context, because: "missing, repeated or invalid Host")
                // Hummingbird answers HTTP parser errors only (any case will do: the refusal's code is recorded
                // above, and the answer is rewritten in `write` below).
                context.fireErrorCaught(HTTPParserError.invalidHeaderToken)
                return
            }
            // Hummingbird's request loop (and the fast path) end the connection after a request whose Connection
            // field is exactly `close`; RFC 9112 §9.3 and RFC 9110 §7.6.1 also mean `Close`, `keep-alive, close`
            // and an HTTP/1.0 request without keep-alive. Such a request goes on saying it in the one spelling.
            if !head.isKeepAlive, head.headers[canonicalForm: "connection"] != ["close"] {
                head.headers.replaceOrAdd(name: "Connection", value: "close")
                context.fireChannelRead(wrapInboundOut(.head(head)))
                return
            }
        case .body(let part):
            let received = (bodyBytes ?? 0) + part.readableBytes
            bodyBytes = received
            guard received <= maxBodyBytes else {
                logger.debug(
                    "closing a connection: its request's body is over the listener's cap",
                    metadata: ["cap": "\(maxBodyBytes)", "peer": "\(context.channel.remoteAddress?.ipAddress ?? "unknown")"])
                state = .answered
                deadline.end()
                context.close(promise: nil)
                return
            }
        case .end:
            deadline.end()
            bodyBytes = nil
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? HTTPParserError, case .open = state {
            let code: TokenGateError.Code = error == .headerOverflow ? .requestHeaderFieldsTooLarge : .badRequest
            refuse(code, context: context, because: "HTTP parser: \(error)")
        }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch (state, unwrapOutboundIn(data)) {
        case (.refused(let code, let requestID), .head(let head))
        where head.status == .badRequest && !head.headers.contains(name: "content-type"):
            // Hummingbird's answer to the parser error (every answer of TokenGate's own has a Content-Type).
            state = .answering(code)
            var answerHead = TokenAnswer(TokenGateError(code, "")).head(requestID: requestID, closing: true)
            answerHead.version = head.version
            context.write(wrapOutboundOut(.head(answerHead)), promise: promise)
        case (.answering, .body):
            promise?.succeed(())
        case (.answering(let code), .end):
            state = .answered
            context.write(wrapOutboundOut(.body(.byteBuffer(TokenGateError(code, "").bodyBuffer))), promise: nil)
            // Hummingbird then closes the output side; input is dropped. Closing outright here would reset a client
            // still sending the rest of an oversized header, and a reset can destroy the answer in its receive buffer
            // before it reads it: the connection goes a moment later.
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: promise)
            closeAfterLinger(context)
        case (.open, .head(var head)) where bodyBytes != nil && head.status.code >= 400:
            // Refused before its body was read: the client is told the connection ends, and nothing more is read.
            closesAfterAnswer = true
            head.headers.replaceOrAdd(name: "Connection", value: "close")
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case (.open, .end) where closesAfterAnswer:
            state = .answered
            context.writeAndFlush(data, promise: promise)
            context.close(mode: .output, promise: nil)
            closeAfterLinger(context)
        default:
            context.write(data, promise: promise)
        }
    }

    private func closeAfterLinger(_ context: ChannelHandlerContext) {
        context.eventLoop.assumeIsolated().scheduleTask(in: Self.linger) { context.close(promise: nil) }
    }

    private func refuse(_ code: TokenGateError.Code, context: ChannelHandlerContext, because reason: String) {
        let requestID = RequestIdentifier.make()
        state = .refused(code, requestID: requestID)
        deadline.end()
        logger.debug(
            "refusing a malformed HTTP request",
            metadata: [
                "code": "\(code)", "reason": "\(reason)", "request_id": "\(requestID)",
                "peer": "\(context.channel.remoteAddress?.ipAddress ?? "unknown")",
            ])
    }

    /// RFC 9112 §3.2: exactly one `Host` field with a valid value; none is fine before HTTP/1.1.
    static func hasValidHost(_ head: HTTPRequestHead) -> Bool {
        var host: String?
        for (name, value) in head.headers where isHost(name) {
            guard host == nil else { return false }
            host = value
        }
        guard let host else { return head.version.major < 1 || (head.version.major == 1 && head.version.minor == 0) }
        // The table is read once here: read per byte, its lazy global's once-check would cost more than the scan.
        return isHostByte.withUnsafeBufferPointer { isHostByte in host.utf8.allSatisfy { isHostByte[Int($0)] } }
    }

    private static func isHost(_ name: String) -> Bool {
        guard name.utf8.count == 4 else { return false }
        // ASCII case-insensitively: setting 0x20 lower-cases letters, and "host" has letters only.
        return zip(name.utf8, "host".utf8).allSatisfy { $0 | 0x20 == $1 }
    }

    /// The bytes of `uri-host [ ":" port ]` (RFC 3986): unreserved, sub-delims, `%` escapes, `:` and an IP
    /// literal's brackets. A table, made once: every request's `Host` is checked byte by byte.
    private static let isHostByte: [Bool] = (0...255).map { (byte: Int) -> Bool in
        switch UInt8(byte) {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "-._~!$&'()*+,;=:%[]".utf8.contains(UInt8(byte))
        }
    }
}
