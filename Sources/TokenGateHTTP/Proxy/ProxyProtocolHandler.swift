import Logging
import Metrics
import NIOCore
import TokenGateCore

/// First on a connection's pipeline when `server.proxyProtocol` is set: reads the PROXY header a trusted proxy sends
/// before anything else, records the client it names in the connection's ``ConnectionOrigin``, hands every later
/// byte on and leaves the pipeline.
///
/// A connection from a peer that is not a trusted proxy is not expected to send one: the handler leaves at once and
/// its bytes are HTTP as usual (a forged header there is a malformed request, 400). A trusted peer must send a
/// valid header of the configured version; anything else closes the connection, counted
/// (`tokengate_proxy_protocol_errors_total`) and logged, since it means the proxy and the gateway disagree.
final class ProxyProtocolHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let version: ProxyProtocolVersion
    private let trustedProxies: TrustedProxies
    private let origin: ConnectionOrigin
    private let logger: Logger
    private var received: ByteBuffer?
    private var finished = false

    private static let errors = Counter(label: "tokengate_proxy_protocol_errors_total")

    init(version: ProxyProtocolVersion, trustedProxies: TrustedProxies, origin: ConnectionOrigin, logger: Logger) {
        self.version = version
        self.trustedProxies = trustedProxies
        self.origin = origin
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !finished else {
            context.fireChannelRead(data)
            return
        }
        if received == nil {
            guard let peer = PeerAddress(context.channel.remoteAddress), trustedProxies.trusts(peer) else {
                // Not a proxy: no header is expected, and none would be believed.
                finished = true
                context.fireChannelRead(data)
                leave(context: context)
                return
            }
        }
        var chunk = unwrapInboundIn(data)
        if received == nil {
            received = chunk
        } else {
            received!.writeBuffer(&chunk)
        }
        switch ProxyProtocolHeader.parse(received!.readableBytesView, version: version) {
        case .incomplete:
            return
        case .header(let client, let length):
            origin.setProxiedClient(client)
            received!.moveReaderIndex(forwardBy: length)
            let rest = received.take()!
            finished = true
            if rest.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(rest)) }
            leave(context: context)
        case .invalid(let reason):
            finished = true
            received = nil
            Self.errors.increment()
            logger.warning(
                "closing a connection from a trusted proxy: bad PROXY protocol header",
                metadata: [
                    "peer": "\(context.channel.remoteAddress?.ipAddress ?? "unknown")", "reason": "\(reason)",
                    "expected": "\(version.rawValue)",
                ])
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        received = nil
        context.fireChannelInactive()
    }

    private func leave(context: ChannelHandlerContext) {
        finished = true
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
