import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import TokenGateCore

/// Each accepted connection's pipeline: Hummingbird's `HTTP1Channel`, with TokenGate's guards where that one has
/// no hook.
///
/// `HTTP1Channel` only takes extra handlers after its HTTP/1 → HTTPTypes conversion, where the HTTP version is
/// gone (a missing `Host` is wrong for HTTP/1.1 only) and the raw bytes that start a request are never seen (a
/// client dribbling its headers). So this child channel builds the same pipeline itself, with
///
/// ```
/// [ProxyProtocolHandler] → RequestStartHandler → HTTP encoder/decoder → HTTP1RequestGuard
///     → HTTP1ConnectionStateHandler (idle timeout, graceful close) → EventLoopTokenHandler (`server.fastPath`)
///     → HTTP1ToHTTPServerCodec → NIOAsyncChannel
/// ```
///
/// and hands each connection to Hummingbird's own request loop (`handleHTTP`), which is unchanged: it gets every
/// request the ``EventLoopTokenHandler`` does not answer on the event loop. The fast path sits before the HTTPTypes
/// conversion, so a cached hit pays for neither conversion; the connection state (Hummingbird's
/// `HTTPConnectionStateHandler`, on HTTP/1 parts) sits before both, so it sees every request.
///
/// What would let us drop this copy (hummingbird 2.28.1, `HTTP1Channel.setup`; upstream's issue #616 asks for an
/// HTTP/1 connection manager): an `HTTP1Channel.Configuration` hook for handlers on HTTP/1 parts, between
/// `configureHTTPServerPipeline` and `HTTP1ToHTTPServerCodec`, with its `HTTPConnectionStateHandler` working on HTTP/1
/// parts ahead of that hook (as ``HTTP1ConnectionStateHandler`` does here), and one for handlers ahead of the HTTP/1
/// decoder (``RequestStartHandler``'s raw bytes, the PROXY header). With those, this type becomes an `HTTP1Channel`
/// configured with ``HTTP1RequestGuard`` and ``EventLoopTokenHandler``, and ``HTTP1ConnectionStateHandler`` goes.
struct GatewayChannel: ServerChildChannel, HTTPChannelHandler {
    /// One connection: its requests and answers, and who it comes from when a PROXY header said so.
    struct Value: ServerChildChannelValue {
        let requests: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>
        let origin: ConnectionOrigin?
        var channel: any Channel { requests.channel }
    }

    /// Limits of one connection.
    struct Configuration: Sendable {
        /// A connection with no request in progress for this long is closed (Hummingbird's idle timeout).
        var idleTimeout: Duration
        /// A request must arrive whole within this time of its first byte.
        var readTimeout: Duration
        /// The HTTP decoder's limits; past them a request is answered 431.
        var decoderLimits: NIOHTTPDecoderLimitConfiguration
        /// The most body bytes a request may send; past it the connection is closed.
        var maxBodyBytes = GatewayChannel.publicMaxBodyBytes
        /// Whether the connection runs over TLS (the requests' scheme is https).
        var isSecure = false
        /// How each request's client address is found.
        var addressing = ClientAddressing(trustedProxies: nil)
        /// The PROXY protocol header trusted proxies send first, or nil for none (then `trustedProxies` is unused).
        var proxyProtocol: (version: ProxyProtocolVersion, trustedProxies: TrustedProxies)?
    }

    /// The public listener's routes take no body: a small one is read and dropped, a larger one closes the connection.
    static let publicMaxBodyBytes = 16 * 1024
    /// The admin listener's largest body: a Pub/Sub push (Fleet Engine splits its entries at 250 KB) or a batch of ends.
    static let adminMaxBodyBytes = 1 << 20 + 64 * 1024

    let responder: HTTPChannelHandler.Responder
    let configuration: Configuration
    /// The token endpoint and the `Server` name for its door on the event loop (hits, refusals, mints), or nil to
    /// leave every request to the router.
    let eventLoopTokens: (endpoint: TokenEndpoint, serverName: String, tracing: EventLoopTokenHandler.Tracing?)?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let deadline = RequestReadDeadline(timeout: TimeAmount(configuration.readTimeout), logger: logger)
            let pipeline = channel.pipeline.syncOperations
            var origin: ConnectionOrigin?
            if let (version, trustedProxies) = configuration.proxyProtocol {
                // First of all, ahead of TLS too: the header precedes every other byte on the wire.
                origin = ConnectionOrigin()
                try pipeline.addHandler(
                    ProxyProtocolHandler(version: version, trustedProxies: trustedProxies, origin: origin!, logger: logger), position: .first)
            }
            try pipeline.addHandler(RequestStartHandler(deadline: deadline))
            try pipeline.configureHTTPServerPipeline(
                withPipeliningAssistance: false,  // NIOAsyncChannel already handles requests one at a time
                withErrorHandling: false,  // HTTP1RequestGuard answers parser errors
                withOutboundHeaderValidation: false,  // HTTPTypes validates header fields already
                withEncoderConfiguration: .init(),
                withDecoderLimitConfiguration: configuration.decoderLimits
            )
            try pipeline.addHandler(HTTP1RequestGuard(deadline: deadline, maxBodyBytes: configuration.maxBodyBytes, logger: logger))
            try pipeline.addHandler(HTTP1ConnectionStateHandler(idleTimeout: TimeAmount(configuration.idleTimeout)))
            if let (endpoint, serverName, tracing) = eventLoopTokens {
                try pipeline.addHandler(
                    EventLoopTokenHandler(
                        endpoint: endpoint, serverName: serverName, tracing: tracing, addressing: configuration.addressing, origin: origin))
            }
            try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: configuration.isSecure))
            let requests = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
            return Value(requests: requests, origin: origin)
        }
    }

    func handle(value: Value, logger: Logger) async {
        guard let origin = value.origin else { return await handleHTTP(asyncChannel: value.requests, logger: logger) }
        // The router's requests are served in this task: each one's context reads the PROXY header's client here.
        await ConnectionOrigin.$current.withValue(origin) { await handleHTTP(asyncChannel: value.requests, logger: logger) }
    }
}
