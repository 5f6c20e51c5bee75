import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A scripted HTTP/1.1 server on 127.0.0.1 that misbehaves on request: per path, a queue of actions (the last one
/// repeats), and a log of every request it received.
final class ScriptedUpstream: Sendable {
    /// What the server does with one request.
    enum Action: Sendable {
        /// A complete response. `chunked` leaves out Content-Length.
        case respond(status: Int, headers: [(String, String)] = [], body: [UInt8] = [], chunked: Bool = false)
        /// Reads the request and never answers.
        case neverAnswer
        /// Sends the head, then one body byte every `interval`, forever.
        case trickle(interval: TimeAmount)
        /// Declares `declaredLength` bytes, sends `body`, then closes the connection.
        case truncate(declaredLength: Int, body: [UInt8])
        /// The action `make` picks for the request (a token minted for the trip it names).
        case answer(@Sendable (Received) -> Action)

        static func json(_ text: String, status: Int = 200) -> Action {
            .respond(status: status, headers: [("Content-Type", "application/json")], body: Array(text.utf8))
        }
    }

    /// A request as received.
    struct Received: Sendable {
        var method: String
        var uri: String
        var headers: [(String, String)]
        var body: [UInt8]

        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
        var path: String { String(uri.prefix { $0 != "?" }) }
    }

    private let scripts = Mutex<[String: [Action]]>([:])
    private let received = Mutex<[Received]>([])
    private let channel: any Channel
    // Its own event loop, so a server busy writing 10 MB never stalls the client under test.
    private let group: MultiThreadedEventLoopGroup

    /// The port it listens on.
    let port: Int

    /// Starts listening on 127.0.0.1 on a free port.
    static func start(port: Int = 0) async throws -> ScriptedUpstream {
        let box = Locked<ScriptedUpstream?>(nil)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(Handler(upstream: { box.withLock { $0 } }))
                }
            }
            .bind(host: "127.0.0.1", port: port)
            .get()
        let upstream = ScriptedUpstream(channel: channel, group: group)
        box.withLock { $0 = upstream }
        return upstream
    }

    private init(channel: any Channel, group: MultiThreadedEventLoopGroup) {
        self.channel = channel
        self.group = group
        self.port = channel.localAddress?.port ?? 0
    }

    /// `http://127.0.0.1:<port>`.
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Replaces the script for `path`.
    func script(_ path: String, _ actions: [Action]) {
        scripts.withLock { $0[path] = actions }
    }

    /// Every request received so far for `path`.
    func requests(to path: String) -> [Received] {
        received.withLock { $0.filter { $0.path == path } }
    }

    func calls(to path: String) -> Int { requests(to: path).count }

    func stop() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    fileprivate func next(for request: Received) -> Action {
        received.withLock { $0.append(request) }
        return scripts.withLock { scripts in
            guard var queue = scripts[request.path], let first = queue.first else {
                return .respond(status: 404)
            }
            if queue.count > 1 {
                queue.removeFirst()
                scripts[request.path] = queue
            }
            return first
        }
    }

    /// A port nothing listens on: bound, then closed.
    static func refusingPort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let port = channel.localAddress?.port ?? 0
        try await channel.close()
        return port
    }
}

private final class Handler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let upstream: @Sendable () -> ScriptedUpstream?
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(upstream: @escaping @Sendable () -> ScriptedUpstream?) { self.upstream = upstream }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(let buffer):
            body += buffer.readableBytesView
        case .end:
            guard let head, let upstream = upstream() else { return }
            let request = ScriptedUpstream.Received(
                method: head.method.rawValue,
                uri: head.uri,
                headers: head.headers.map { ($0.name, $0.value) },
                body: body
            )
            var action = upstream.next(for: request)
            if case .answer(let make) = action { action = make(request) }
            perform(action, context: context)
        }
    }

    private func perform(_ action: ScriptedUpstream.Action, context: ChannelHandlerContext) {
        let channel = context.channel
        switch action {
        case .respond(let status, let headers, let body, let chunked):
            var fields = HTTPHeaders(headers)
            if !chunked { fields.replaceOrAdd(name: "Content-Length", value: "\(body.count)") }
            let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: fields)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            if !body.isEmpty {
                // Chunked bodies go out in pieces, as a streaming server would send them.
                var offset = 0
                while offset < body.count {
                    let end = min(offset + 65_536, body.count)
                    context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body[offset..<end])))), promise: nil)
                    offset = end
                }
            }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        case .neverAnswer, .answer:
            break
        case .trickle(let interval):
            var fields = HTTPHeaders()
            fields.add(name: "Content-Length", value: "1000")
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: fields))), promise: nil)
            context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { task in
                guard channel.isActive else { return task.cancel() }
                channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: " "))), promise: nil)
            }
        case .truncate(let declaredLength, let body):
            var fields = HTTPHeaders()
            fields.add(name: "Content-Length", value: "\(declaredLength)")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: fields))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
            context.close(promise: nil)
        }
    }
}
