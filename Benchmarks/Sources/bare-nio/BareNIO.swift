import BareServerSupport
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The load benchmark's floor for a Swift server: SwiftNIO's HTTP/1 pipeline on one event loop, answering every
// request, whatever its path, with a fixed JSON body and the headers the bare Hummingbird route sends. No router, no
// request context, no async: what bare-route costs over this is Hummingbird's, what nginx costs under it is NIO's.
//
// Usage: bare-nio [--port P] [--size N] [--host H]
// Prints `bare-nio listening on http://HOST:PORT` on standard output once bound, like bare-route.

/// Writes to a descriptor with write(2): unbuffered, so a redirected standard output shows the line at once.
func say(_ line: String, to descriptor: Int32) {
    var line = line
    line.withUTF8 { bytes in _ = write(descriptor, bytes.baseAddress, bytes.count) }
}

/// The current time as an HTTP date (`Mon, 23 Nov 2026 02:24:13 GMT`); strftime's C locale gives English names.
func httpDate() -> String {
    var now = time(nil)
    var parts = tm()
    gmtime_r(&now, &parts)
    var text = [CChar](repeating: 0, count: 64)
    let count = strftime(&text, text.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
    return String(decoding: text.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The response head bare-route sends, field for field and in its order, so both put the same bytes on the wire.
func responseHead(bodySize: Int, date: String) -> HTTPResponseHead {
    HTTPResponseHead(
        version: .http1_1,
        status: .ok,
        headers: [
            "Content-Type": "application/json",
            "Cache-Control": "no-store",
            "Content-Length": String(bodySize),
            "Date": date,
            "Server": "TokenGate",
        ]
    )
}

/// Answers each request once its end arrives; flushes once per read burst, as NIO servers do.
final class FixedResponseHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Shared by every connection: they all live on the one event loop, whose timer refreshes the Date field.
    private let head: NIOLoopBoundBox<HTTPResponseHead>
    private let body: ByteBuffer
    private var keepAlive = true, version = HTTPVersion.http1_1

    init(head: NIOLoopBoundBox<HTTPResponseHead>, body: ByteBuffer) {
        self.head = head
        self.body = body
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            keepAlive = request.isKeepAlive
            version = request.version
        case .body:
            break
        case .end:
            var response = head.value
            // HTTP/1.1 keeps the connection by default, so wrk's requests get the head as it is; anything else says.
            if !keepAlive {
                response.headers.add(name: "Connection", value: "close")
            } else if version != .http1_1 {
                response.headers.add(name: "Connection", value: "keep-alive")
            }
            context.write(wrapOutboundOut(.head(response)), promise: nil)
            // The same storage every time: a ByteBuffer copy shares it, nothing is allocated for the body.
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            if keepAlive {
                context.write(wrapOutboundOut(.end(nil)), promise: nil)
            } else {
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

@main
enum BareNIO {
    static func main() throws {
        let options = BareServerOptions.parse(CommandLine.arguments, program: "bare-nio")
        let body = fixedTokenBody(size: options.size)
        // One event loop: the configuration the issue measured, and the one thread all connections share.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let head = NIOLoopBoundBox.makeBoxSendingValue(
            responseHead(bodySize: body.readableBytes, date: httpDate()),
            eventLoop: loop
        )
        // Once a second, as Hummingbird refreshes its cached date; the head is rebuilt so the field order stays.
        loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            head.value = responseHead(bodySize: body.readableBytes, date: httpDate())
        }

        let channel = try ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(FixedResponseHandler(head: head, body: body))
                }
            }
            .bind(host: options.host, port: options.port)
            .wait()
        let port = channel.localAddress?.port ?? options.port
        say("bare-nio listening on http://\(options.host):\(port)\n", to: 1)
        try channel.closeFuture.wait()
    }
}
