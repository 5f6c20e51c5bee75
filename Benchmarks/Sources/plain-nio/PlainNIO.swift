import BareServerSupport
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The load benchmark's second floor (issue 49): the plainest SwiftNIO HTTP/1 server there is, as an independent
// measurement wrote it. NIO's HTTP server pipeline with its defaults, one handler, a fixed body and three headers
// made once, and `writeAndFlush` per answer; one event loop. Where bare-nio copies the bare route's five headers
// and flushes once per read, this one does the least a server can, so the gateway is held to the cheaper of the two.
//
// Usage: plain-nio [--port P] [--size N] [--host H]
// Prints `plain-nio listening on http://HOST:PORT` on standard output once bound, like the other yardsticks.

/// Answers each request's end with the one head and body.
final class PlainResponseHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let head: HTTPResponseHead
    private let body: ByteBuffer

    init(head: HTTPResponseHead, body: ByteBuffer) {
        self.head = head
        self.body = body
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

@main
enum PlainNIO {
    static func main() throws {
        let options = BareServerOptions.parse(CommandLine.arguments, program: "plain-nio")
        let body = fixedTokenBody(size: options.size)
        let head = HTTPResponseHead(
            version: .http1_1, status: .ok,
            headers: ["Content-Type": "application/json", "Content-Length": String(body.readableBytes), "Server": "plain-nio"])
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(PlainResponseHandler(head: head, body: body))
                }
            }
            .bind(host: options.host, port: options.port)
            .wait()
        let port = channel.localAddress?.port ?? options.port
        var line = "plain-nio listening on http://\(options.host):\(port)\n"
        line.withUTF8 { bytes in _ = write(1, bytes.baseAddress, bytes.count) }
        try channel.closeFuture.wait()
    }
}
