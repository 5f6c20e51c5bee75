public import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTP1
public import Logging
public import TokenGateCore

/// Builds the HTTP application that serves a token service.
public enum GatewayApplication {
    /// The application for `service`, listening where `server` says, with its connection limits and timeouts.
    /// `onServerRunning` learns the bound port once the connection cap is in force.
    public static func make(
        service: TokenService,
        server: ServerSettings,
        limits: RequestLimits = RequestLimits(),
        clock: TokenGateClock = .system,
        logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router(context: TokenGateRequestContext.self)
        // First, so it wraps every route and the router's not-found answer.
        router.add(middleware: GatewayMiddleware(routes: TokenRoutes.table))
        TokenRoutes(service: service, limits: limits, clock: clock).register(on: router)
        var decoderLimits = NIOHTTPDecoderLimitConfiguration()
        // Past these the decoder refuses the request before a handler runs: 431.
        decoderLimits.maxHeaderFieldSize = 16 * 1024
        decoderLimits.maxHeaderListSize = 32 * 1024
        decoderLimits.maxHeaderFieldCount = 64
        let connection = GatewayChannel.Configuration(
            idleTimeout: server.idleTimeout, readTimeout: server.readTimeout, decoderLimits: decoderLimits)
        let maxConnections = server.maxConnections
        return Application(
            router: router,
            server: HTTPServerBuilder { responder in GatewayChannel(responder: responder, configuration: connection) },
            configuration: .init(
                address: .hostname(server.host, port: server.port), serverName: "TokenGate", backlog: server.listenBacklog),
            onServerRunning: { channel in
                do {
                    try await ListenerGuard.install(on: channel, maxConnections: maxConnections, logger: logger)
                } catch {
                    // Only if the listener closed while starting; the service group is ending anyway.
                    logger.error("cannot install the connection limit on the listener", metadata: ["error": "\(error)"])
                }
                await onServerRunning(channel.localAddress?.port ?? server.port)
            },
            logger: logger
        )
    }
}
