import NIOCore
import NIOPosix
import NIOSSL

/// One connection to the server, authenticated and on the configured database. Commands may be sent from any
/// number of tasks at once: they are pipelined, and each reply goes to its own command.
///
/// A command that misses its deadline closes the connection (a late reply would answer the next command), and
/// every command in flight then fails; so does every command once the server closes the connection.
package final class RESPConnection: RESPCommandSending, Sendable {
    let channel: any Channel
    private let commandTimeout: Duration
    private let retirement: RESPConnectionRetirement

    private init(channel: any Channel, commandTimeout: Duration, retirement: RESPConnectionRetirement) {
        self.channel = channel
        self.commandTimeout = commandTimeout
        self.retirement = retirement
    }

    /// Opens a connection, then runs the handshake (`HELLO 3` or `AUTH`, then `SELECT`). `tlsContext` is required
    /// when `configuration.tls` is set (see ``RESPClient``, which makes it once); `pushes` receives values that
    /// answer no command.
    static func connect(
        configuration: RESPConfiguration, tlsContext: NIOSSLContext?, eventLoopGroup: any EventLoopGroup,
        pushes: AsyncStream<RESPValue>.Continuation? = nil
    ) async throws -> RESPConnection {
        let serverName = Self.serverName(for: configuration)
        let limits = configuration.decoderLimits
        let eventLoop = eventLoopGroup.next()
        let tlsEstablished = tlsContext.map { _ in eventLoop.makePromise(of: Void.self) }
        let retirement = RESPConnectionRetirement()
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(TimeAmount(configuration.connectTimeout))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tlsContext {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: tlsContext, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHandler(
                        RESPChannelHandler(limits: limits, pushes: pushes, tlsEstablished: tlsEstablished, retirement: retirement))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: configuration.host, port: configuration.port).get()
        } catch {
            tlsEstablished?.fail(error)  // the handler may never have been added to complete it
            throw error
        }
        let connection = RESPConnection(channel: channel, commandTimeout: configuration.commandTimeout, retirement: retirement)
        do {
            // Wait for TLS before the first command, so a certificate problem fails the connection attempt with its
            // reason (and the pool backs off), not the commands that follow.
            if let tlsEstablished {
                let timeout = eventLoop.scheduleTask(in: TimeAmount(configuration.connectTimeout)) {
                    tlsEstablished.fail(RESPError.connectionFailed("TLS handshake timed out"))
                }
                defer { timeout.cancel() }
                try await tlsEstablished.futureResult.get()
            }
            for command in Self.handshake(for: configuration) { _ = try await connection.send(command) }
        } catch {
            await connection.close()
            throw error
        }
        return connection
    }

    /// The commands that make a fresh connection usable, in order.
    static func handshake(for configuration: RESPConfiguration) -> [RESPCommand] {
        var commands: [RESPCommand] = []
        switch (configuration.protocolVersion, configuration.password) {
        case (.resp3, let password?):
            commands.append(RESPCommand(["HELLO", "3", "AUTH", configuration.username ?? "default", password]))
        case (.resp3, nil):
            commands.append(RESPCommand(["HELLO", "3"]))
        case (.resp2, let password?):
            commands.append(RESPCommand(["AUTH"] + [configuration.username, password].compactMap { $0 }))
        case (.resp2, nil):
            break
        }
        if configuration.database != 0 { commands.append(RESPCommand(["SELECT", String(configuration.database)])) }
        return commands
    }

    /// The name the server's certificate must carry for SNI and verification; nil for an IP address, which
    /// swift-nio-ssl then checks against the certificate's IP addresses.
    private static func serverName(for configuration: RESPConfiguration) -> String? {
        guard let tls = configuration.tls else { return nil }
        let name = tls.serverName ?? configuration.host
        let isAddress = (try? SocketAddress(ipAddress: name, port: 0)) != nil
        return isAddress ? nil : name
    }

    /// Sends `command` and waits for its reply, at most `deadline` (default: the configuration's command timeout).
    /// An error reply throws ``RESPError/server(_:)``. Cancelling the waiting task stops the wait; the reply, when
    /// it comes, is read and dropped, so the pipeline stays in step.
    @discardableResult
    package func send(_ command: RESPCommand, deadline: Duration? = nil) async throws -> RESPValue {
        let reply = write(command, deadline: deadline)
        return try await withTaskCancellationHandler {
            try await reply.futureResult.get()
        } onCancel: {
            reply.fail(CancellationError())
        }
    }

    /// Writes `command` (at once when called on the connection's event loop) and returns the promise of its reply,
    /// completed on that loop.
    func write(_ command: RESPCommand, deadline: Duration?) -> EventLoopPromise<RESPValue> {
        let reply = channel.eventLoop.makePromise(of: RESPValue.self)
        let request = RESPRequest(
            command: command, reply: reply, deadline: NIODeadline.now() + TimeAmount(deadline ?? commandTimeout))
        // A closed channel may have no handler left to fail the reply: the failed write does it then.
        channel.writeAndFlush(request).whenFailure { _ in reply.fail(RESPError.connectionClosed) }
        return reply
    }

    /// ``write(_:deadline:)`` from the connection's own event loop, with no promise for the write: while the channel
    /// is active, its handler is in place and fails the reply if the write does.
    func writeOnItsLoop(_ command: RESPCommand, deadline: Duration?) -> EventLoopFuture<RESPValue> {
        channel.eventLoop.preconditionInEventLoop()
        guard isActive else { return channel.eventLoop.makeFailedFuture(RESPError.connectionClosed) }
        let reply = channel.eventLoop.makePromise(of: RESPValue.self)
        let request = RESPRequest(
            command: command, reply: reply, deadline: NIODeadline.now() + TimeAmount(deadline ?? commandTimeout))
        channel.writeAndFlush(request, promise: nil)
        return reply.futureResult
    }

    /// Writes a command that no reply answers (on a subscriber connection: `SUBSCRIBE`, `UNSUBSCRIBE`).
    func sendWithoutReply(_ command: RESPCommand) async throws {
        do {
            try await channel.writeAndFlush(RESPRequest(command: command, reply: nil, deadline: nil)).get()
        } catch {
            throw (error as? RESPError) ?? .connectionClosed
        }
    }

    /// Whether the connection is open and takes new commands (one that missed its deadline retired it).
    package var isActive: Bool { channel.isActive && !retirement.isRetired }

    /// Closes the connection and waits until it is closed; commands in flight fail with
    /// ``RESPError/connectionClosed``.
    package func close() async {
        channel.close(promise: nil)
        try? await channel.closeFuture.get()
    }
}
