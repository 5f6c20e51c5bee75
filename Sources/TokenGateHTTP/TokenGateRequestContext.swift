package import Hummingbird
package import NIOCore
import TokenGateCore

/// Per-request state for TokenGate routes.
package struct TokenGateRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    /// The socket's peer (a proxy's, behind one).
    package let remoteAddress: SocketAddress?
    /// This request's ID: the caller's well-formed `X-Request-ID`, else one the gateway made. Set by the
    /// outermost middleware, echoed in the `X-Request-ID` response header and logged with every line about the
    /// request.
    package internal(set) var requestID = ""
    /// The fields the gateway reads (``RequestFields``), read once by the outermost middleware.
    var fields = RequestFields()
    /// The `Origin` header, when exactly one was sent (browsers).
    var origin: String? { fields.origin }

    /// The client's address, as a number for a rate-limit bucket that costs no string: the connection's peer (or
    /// the client its PROXY header named), until ``GatewayMiddleware`` follows a trusted proxy's forwarding header.
    var peer: PeerAddress?

    package init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.peer = ClientAddressing.connectionPeer(of: source.channel, origin: ConnectionOrigin.current)
    }
}

extension PeerAddress {
    /// `address` as a number. Read from the socket address's bytes: `sockaddr_in` keeps the IPv4 address at offset
    /// 4, `sockaddr_in6` the IPv6 one at offset 8 (POSIX layout). Nil for no address or a Unix socket.
    init?(_ address: SocketAddress?) {
        guard let address else { return nil }
        switch address {
        case .v4:
            self = address.withSockAddr { pointer, _ in
                let bytes = UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer) + 4, count: 4)
                return PeerAddress(ipv4: bytes.reduce(0) { $0 << 8 | UInt32($1) })
            }
        case .v6:
            self = address.withSockAddr { pointer, _ in
                PeerAddress(ipv6: UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer) + 8, count: 16))
            }
        default:
            return nil
        }
    }
}
