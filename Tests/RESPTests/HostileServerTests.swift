import NIOCore
import NIOPosix
import RESP
import RESPTesting
import Testing

/// A fake server on 127.0.0.1 that answers every read with fixed bytes: what a compromised or confused peer could
/// send. The client must fail the command with a clear error and close the connection, never crash or hang.
@Suite struct HostileServerTests {
    final class FixedReply: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let reply: String
        init(_ reply: String) { self.reply = reply }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: reply)), promise: nil)
        }
    }

    static func withFakeServer(replying reply: String, _ body: (Int) async throws -> Void) async throws {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(FixedReply(reply)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        do {
            try await body(try #require(channel.localAddress?.port))
            try await channel.close()
        } catch {
            try? await channel.close()
            throw error
        }
    }

    @Test(arguments: [
        ("$99999999999\r\n", RESPDecodingError.bulkTooLong(length: 99_999_999_999, limit: 16 << 20)),
        ("*-7\r\n", .invalidLength("-7")),
        ("+PONG\r\r", .badTerminator),
    ])
    func aHostileReplyFailsTheCommandAndClosesTheConnection(reply: String, expected: RESPDecodingError) async throws {
        try await Self.withFakeServer(replying: reply) { port async throws in
            let client = try RESPClient(configuration: RESPConfiguration(host: "127.0.0.1", port: port))
            try await client.withConnection { connection async throws in
                await #expect(throws: RESPError.protocolViolation(expected)) { try await connection.send(["PING"]) }
                #expect(!connection.isActive)
            }
            await client.shutdown()
        }
    }

    @Test func anEndlessLineFailsTheCommandAndClosesTheConnection() async throws {
        try await Self.withFakeServer(replying: "+" + String(repeating: "x", count: 70_000)) { port async throws in
            let client = try RESPClient(configuration: RESPConfiguration(host: "127.0.0.1", port: port))
            try await client.withConnection { connection async throws in
                await #expect(throws: RESPError.protocolViolation(.lineTooLong(limit: 65536))) {
                    try await connection.send(["PING"])
                }
                #expect(!connection.isActive)
            }
            await client.shutdown()
        }
    }

    @Test func aReplyToNoCommandClosesTheConnection() async throws {
        // Two replies to one PING: the second answers nothing, so the stream is out of step.
        try await Self.withFakeServer(replying: "+PONG\r\n+PONG\r\n") { port async throws in
            let client = try RESPClient(configuration: RESPConfiguration(host: "127.0.0.1", port: port))
            try await client.withConnection { connection async throws in
                #expect(try await connection.send(["PING"]).string == "PONG")
                #expect(try await eventually(within: .seconds(5)) { !connection.isActive })
            }
            await client.shutdown()
        }
    }

    @Test func aServerThatNeverAnswersTimesOut() async throws {
        try await Self.withFakeServer(replying: "") { port async throws in
            var configuration = RESPConfiguration(host: "127.0.0.1", port: port)
            configuration.commandTimeout = .milliseconds(100)
            let client = try RESPClient(configuration: configuration)
            await #expect(throws: RESPError.timeout(command: "PING")) { try await client.ping() }
            await client.shutdown()
        }
    }

    @Test func aSubscriptionThatIsNeverConfirmedTimesOut() async throws {
        try await Self.withFakeServer(replying: "") { port async throws in
            var configuration = RESPConfiguration(host: "127.0.0.1", port: port)
            configuration.commandTimeout = .milliseconds(100)
            let client = try RESPClient(configuration: configuration)
            await #expect(throws: RESPError.timeout(command: "SUBSCRIBE")) {
                try await client.subscribe(to: ["events"]) { _ in Issue.record("the body ran without a subscription") }
            }
            await client.shutdown()
        }
    }

    /// A peer that accepts the connection but never speaks TLS fails the connection attempt, not a command.
    @Test func aTLSHandshakeThatNeverCompletesTimesOut() async throws {
        try await Self.withFakeServer(replying: "") { port async throws in
            var configuration = RESPConfiguration(host: "127.0.0.1", port: port)
            configuration.tls = .init(serverName: "localhost")
            // The handshake's wait is the connect timeout; the default 2 s leaves the TCP connect, which shares it,
            // room on a loaded machine (it timed out at 200 ms, failing the test for the wrong reason).
            configuration.connectTimeout = .seconds(2)
            let client = try RESPClient(configuration: configuration)
            await #expect(throws: RESPError.connectionFailed("TLS handshake timed out")) { try await client.ping() }
            await client.shutdown()
        }
    }

    /// A caller that gives up while its connection is being opened is told at once; the attempt goes on for the
    /// callers after it (here, to time out on the silent server's AUTH), and only its failure starts a backoff.
    @Test func aCancelledConnectionAttemptIsNotAFailure() async throws {
        try await Self.withFakeServer(replying: "") { port async throws in
            var configuration = RESPConfiguration(host: "127.0.0.1", port: port)
            configuration.password = "secret"
            // The cancel must come before AUTH times out: with 300 ms a busy CI machine woke the 50 ms sleep after
            // the timeout, so the caller saw a failure. Three seconds leave that margin at the cost of one wait.
            configuration.commandTimeout = .seconds(3)
            configuration.reconnectBackoff = .init(initial: .seconds(30), maximum: .seconds(30))
            // One event loop, so one shared connection slot that every caller here waits on. On the two-loop
            // default group, callers off the loops take the slots in turn: the second caller opened a connection of
            // its own, and the third joined the first attempt when a loaded CI machine had started it late.
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let client = try RESPClient(configuration: configuration, eventLoopGroup: group)
            let caller = Task { try await client.ping() }
            try await Task.sleep(for: .milliseconds(50))
            caller.cancel()
            await #expect(throws: CancellationError.self) { try await caller.value }
            await #expect(throws: RESPError.timeout(command: "AUTH")) { try await client.ping() }
            // That one was a failure: now the pool backs off.
            await #expect(throws: RESPError.unavailable(reason: "timeout(command: \"AUTH\")")) { try await client.ping() }
            await client.shutdown()
            try await group.shutdownGracefully()
        }
    }
}
