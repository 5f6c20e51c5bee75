public import Hummingbird
import HummingbirdCore
import NIOCore
public import Logging
public import TokenGateCore

/// Builds the HTTP application that serves a token service.
public enum GatewayApplication {
    /// The application for `service`, listening where `server` says. `onServerRunning` learns the bound port.
    public static func make(
        service: TokenService,
        server: ServerSettings,
        limits: RequestLimits = RequestLimits(),
        clock: TokenGateClock = .system,
        logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router(context: TokenGateRequestContext.self)
        TokenRoutes(service: service, limits: limits, clock: clock).register(on: router)
        // Oversized headers are refused by the HTTP decoder before a handler runs.
        let http1 = HTTP1Channel.Configuration(
            idleTimeout: .seconds(60),
            httpDecoderConfiguration: .init(maxHeaderFieldSize: 16 * 1024, maxHeaderListSize: 32 * 1024, maxHeaderFieldCount: 64)
        )
        return Application(
            router: router,
            server: .http1(configuration: http1),
            configuration: .init(address: .hostname(server.host, port: server.port), serverName: "TokenGate"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? server.port) },
            logger: logger
        )
    }
}
