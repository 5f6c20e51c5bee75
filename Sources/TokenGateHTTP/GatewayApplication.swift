import Foundation
package import Hummingbird
import HummingbirdCore
import HummingbirdTLS
package import Logging
package import NIOCore
import NIOHTTP1
import NIOPosix
package import TokenGateCore

/// Builds the HTTP applications that serve a token service: the public one and the operator's admin one.
package enum GatewayApplication {
    /// The public application for `service`, listening where `server` says (HTTPS when `server.tls` is set), with
    /// its connection limits and timeouts, on `eventLoopGroup` (`tokengate serve` passes its own, sized by
    /// ``ServerEventLoops``). `onServerRunning` learns the bound port once the connection cap is in force. Throws
    /// when the TLS certificate or key cannot be used.
    package static func make(
        service: TokenService,
        server: ServerSettings,
        limits: RequestLimits = RequestLimits(),
        clock: TokenGateClock = .system,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws -> some ApplicationProtocol {
        let router = Router(context: TokenGateRequestContext.self)
        // With tracing, a server span around everything, so it sees every answer's final status.
        if let tracer = service.tracer {
            router.add(middleware: RequestTracingMiddleware(tracer: tracer, sampler: service.traceSampler, decidedAtTheDoor: server.fastPath))
        }
        // First (after the span), so it wraps every route and the router's not-found answer.
        let addressing = ClientAddressing(trustedProxies: server.trustedProxies)
        router.add(middleware: GatewayMiddleware(routes: TokenRoutes.table, metrics: service.generation.metrics, addressing: addressing))
        let routes = TokenRoutes(service: service, limits: limits, clock: clock)
        routes.register(on: router)
        let serverName = "TokenGate"
        let tracing = service.tracer.map { EventLoopTokenHandler.Tracing(sampler: service.traceSampler, tracer: $0) }
        let eventLoopTokens = server.fastPath ? (routes.endpoint, serverName, tracing) : nil
        var connection = GatewayChannel.Configuration(
            idleTimeout: server.idleTimeout, readTimeout: server.readTimeout, decoderLimits: decoderLimits, isSecure: server.tls != nil,
            addressing: addressing)
        if let version = server.proxyProtocol, let trustedProxies = server.trustedProxies { connection.proxyProtocol = (version, trustedProxies) }
        var builder = HTTPServerBuilder { [connection] responder in
            GatewayChannel(responder: responder, configuration: connection, eventLoopTokens: eventLoopTokens)
        }
        if let tls = server.tls {
            let identity = try TLSIdentity(service: service, initial: tls, logger: logger)
            builder = try .tls(builder, tlsConfiguration: identity.configuration())
        }
        let maxConnections = server.maxConnections
        return Application(
            router: router,
            server: builder,
            configuration: .init(
                address: .hostname(server.host, port: server.port), serverName: serverName, backlog: server.listenBacklog),
            onServerRunning: { channel in
                do {
                    try await ListenerGuard.install(on: channel, maxConnections: maxConnections, listener: .public, logger: logger)
                } catch {
                    // Only if the listener closed while starting; the service group is ending anyway.
                    logger.error("cannot install the connection limit on the listener", metadata: ["error": "\(error)"])
                }
                await onServerRunning(channel.localAddress?.port ?? server.port)
            },
            eventLoopGroupProvider: .shared(eventLoopGroup),
            logger: logger
        )
    }

    /// Past these the decoder refuses a request before a handler runs: 431.
    static var decoderLimits: NIOHTTPDecoderLimitConfiguration {
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = 16 * 1024
        limits.maxHeaderListSize = 32 * 1024
        limits.maxHeaderFieldCount = 64
        return limits
    }

    /// The admin application: `/metrics`, `/healthz` and `/readyz` on `admin`'s address, plain HTTP (loopback by
    /// default; put it behind the network's own controls if it must leave the host). It has the public listener's
    /// guards (`idleTimeout`, `readTimeout`, the decoder's limits) and a connection cap of its own
    /// (`admin.maxConnections`): idle or trickling connections to it cannot take the descriptors the public
    /// listener serves with.
    package static func makeAdmin(
        service: TokenService,
        exporter: MetricsExporter,
        admin: AdminListener,
        idleTimeout: Duration = ServerSettings().idleTimeout,
        readTimeout: Duration = ServerSettings().readTimeout,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router(context: TokenGateRequestContext.self)
        router.add(middleware: GatewayMiddleware(routes: AdminRoutes.table, metrics: nil))
        AdminRoutes(service: service, exporter: exporter).register(on: router)
        let connection = GatewayChannel.Configuration(
            idleTimeout: idleTimeout, readTimeout: readTimeout, decoderLimits: decoderLimits, maxBodyBytes: GatewayChannel.adminMaxBodyBytes)
        return Application(
            router: router,
            server: HTTPServerBuilder { responder in GatewayChannel(responder: responder, configuration: connection, eventLoopTokens: nil) },
            configuration: .init(address: .hostname(admin.host, port: admin.port), serverName: "TokenGate"),
            onServerRunning: { channel in
                do {
                    try await ListenerGuard.install(on: channel, maxConnections: admin.maxConnections, listener: .admin, logger: logger)
                } catch {
                    logger.error("cannot install the connection limit on the admin listener", metadata: ["error": "\(error)"])
                }
                await onServerRunning(channel.localAddress?.port ?? admin.port)
            },
            eventLoopGroupProvider: .shared(eventLoopGroup),
            logger: logger
        )
    }
}

/// A path a listener answers, in OpenAPI's syntax (`{providerId}`), with its methods: what the routers serve, for
/// checking the OpenAPI document against them.
package struct RouteDescription: Sendable, Hashable {
    /// The path, `{name}` for a parameter.
    package let path: String
    /// The methods it answers, upper case.
    package let methods: Set<String>
}

extension GatewayApplication {
    /// What the public listener routes.
    package static var publicRoutes: [RouteDescription] { describe(TokenRoutes.table) }

    /// What the admin listener routes.
    package static var adminRoutes: [RouteDescription] { describe(AdminRoutes.table) }

    private static func describe(_ table: RouteTable) -> [RouteDescription] {
        table.routes.map { route in
            let path = route.path.split(separator: "/", omittingEmptySubsequences: false)
                .map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
            let methods = Set(route.allow.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            return RouteDescription(path: path, methods: methods)
        }
    }
}
