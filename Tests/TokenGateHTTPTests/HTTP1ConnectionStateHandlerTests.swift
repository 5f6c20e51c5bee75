import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import TokenGateHTTP

/// The idle timeout and graceful close on HTTP/1 parts, on an embedded loop whose clock the test moves: every
/// answer written through the handler counts, whichever door (fast path or router) wrote it.
@Suite struct HTTP1ConnectionStateHandlerTests {
    struct Connection {
        let loop = EmbeddedEventLoop()
        let channel: EmbeddedChannel

        init(idleTimeout: TimeAmount = .seconds(10)) throws {
            channel = EmbeddedChannel(handler: HTTP1ConnectionStateHandler(idleTimeout: idleTimeout), loop: loop)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 8080)).wait()
        }

        var isOpen: Bool { channel.isActive }

        func after(_ time: TimeAmount) { loop.advanceTime(by: time) }

        func request() throws {
            try channel.writeInbound(HTTPServerRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/healthz")))
            try channel.writeInbound(HTTPServerRequestPart.end(nil))
        }

        func answer() throws {
            try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
            try channel.writeOutbound(HTTPServerResponsePart.end(nil))
        }
    }

    @Test func aConnectionWithNothingToDoClosesAtTheIdleTimeout() throws {
        let connection = try Connection()
        connection.after(.milliseconds(9_999))
        #expect(connection.isOpen)
        connection.after(.milliseconds(1))
        #expect(!connection.isOpen)
    }

    /// The timeout counts from the last answer's end, not from the connection's start.
    @Test func anAnswerRestartsTheIdleTimeout() throws {
        let connection = try Connection()
        connection.after(.seconds(8))
        try connection.request()
        try connection.answer()
        connection.after(.seconds(9))
        #expect(connection.isOpen)
        connection.after(.seconds(1))
        #expect(!connection.isOpen)
    }

    /// A request read whole and still being answered (a slow mint) is never idle.
    @Test func aRequestBeingAnsweredKeepsTheConnection() throws {
        let connection = try Connection()
        try connection.request()
        connection.after(.seconds(60))
        #expect(connection.isOpen)
        try connection.answer()
        connection.after(.seconds(10))
        #expect(!connection.isOpen)
    }

    @Test func aGracefulShutdownClosesAnIdleConnectionAtOnce() throws {
        let connection = try Connection()
        connection.channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        connection.loop.run()
        #expect(!connection.isOpen)
    }

    /// A connection owing an answer is closed right after it, and the answer is written (flushed) first.
    @Test func aGracefulShutdownClosesABusyConnectionAfterItsAnswer() throws {
        let connection = try Connection()
        try connection.request()
        connection.channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        connection.loop.run()
        #expect(connection.isOpen)
        try connection.answer()
        connection.loop.run()
        #expect(!connection.isOpen)
        guard
            case .end? = try connection.channel.readOutbound(as: HTTPServerResponsePart.self).flatMap({ _ in
                try connection.channel.readOutbound(as: HTTPServerResponsePart.self)
            })
        else {
            Issue.record("the answer was not written before the close")
            return
        }
    }
}
