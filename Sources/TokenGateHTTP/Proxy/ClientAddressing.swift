import HTTPTypes
import NIOCore
import NIOHTTP1
import TokenGateCore

/// How a request's client address is found, for the failed-authentication limit per peer and every log line about
/// the request: the connection's peer (or the client its PROXY header named), then, when that peer is a trusted
/// proxy, the chain in its forwarding header (``TrustedProxies``). Without `server.trustedProxies`, the peer.
struct ClientAddressing: Sendable {
    private let trustedProxies: TrustedProxies?
    private let header: HTTPField.Name?

    init(trustedProxies: TrustedProxies?) {
        self.trustedProxies = trustedProxies
        header = trustedProxies.flatMap { HTTPField.Name($0.header.rawValue) }
    }

    /// The client of a request with `headers` that came from `peer`.
    func client(peer: PeerAddress?, headers: HTTPFields) -> PeerAddress? {
        client(peer: peer) { headers[values: $0].map { $0[...] } }
    }

    /// The client of a request with the HTTP/1 `headers` (the fast path's) that came from `peer`.
    func client(peer: PeerAddress?, headers: HTTPHeaders) -> PeerAddress? {
        client(peer: peer) { headers[$0.rawName].map { $0[...] } }
    }

    /// `forwarded` reads the forwarding header's values, only when the peer is a trusted proxy.
    private func client(peer: PeerAddress?, forwarded: (HTTPField.Name) -> [Substring]) -> PeerAddress? {
        guard let trustedProxies, let header, let peer, trustedProxies.trusts(peer) else { return peer }
        let values = forwarded(header)
        guard !values.isEmpty else { return peer }
        return trustedProxies.client(peer: peer, forwarded: values)
    }

    /// The peer of `channel`: the client its PROXY header named, else the socket's.
    static func connectionPeer(of channel: any Channel, origin: ConnectionOrigin?) -> PeerAddress? {
        origin?.proxiedClient ?? PeerAddress(channel.remoteAddress)
    }
}
