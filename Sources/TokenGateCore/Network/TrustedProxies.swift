/// `server.trustedProxies`: the load balancers and proxies in front of the gateway, whose word about the client's
/// address is believed. Every other peer is the client itself, whatever headers it sends.
///
/// The address found is the one the failed-authentication limit per peer, the denial log, the audit log and the
/// request log use. Without it, behind a proxy every caller would share the proxy's address: one caller's bad
/// keys would lock out the rest.
///
/// A request's client is found by walking its forwarding chain from the nearest hop outwards: the socket's peer
/// (or the address in a PROXY protocol header), then the `X-Forwarded-For` entries (or `Forwarded: for=`) from
/// the right. A hop is skipped while it is a proxy: its address is in `networks`, or it is one of the first
/// `hops` hops (the peer counts as the first), for proxies whose addresses cannot be listed (a cloud load
/// balancer's own forwarding address). The first hop that is not a proxy is the client. Entries to its left were
/// written by the client and are never read. If every hop is a proxy, the farthest one is taken; if a proxy wrote
/// something that is not an address (`unknown`, a hidden name), the last address before it is.
package struct TrustedProxies: Sendable, Equatable {
    /// The header proxies write the chain into. Only one is read: a proxy writes one, and a client could forge
    /// the other.
    package enum Header: String, Sendable, Equatable {
        /// `X-Forwarded-For: client, proxy1, proxy2` (de facto standard: nginx, Envoy, haproxy, every cloud LB).
        case xForwardedFor = "x-forwarded-for"
        /// `Forwarded: for=client, for=proxy1` (RFC 7239).
        case forwarded
    }

    /// Peers (and forwarding hops) trusted by address.
    package var networks: [IPNetwork]
    /// How many hops are proxies by position, the socket's peer counting as the first; 1 trusts by address only.
    package var hops: Int
    /// Which header carries the chain.
    package var header: Header

    /// Proxies in `networks`; `hops` and `header` as described on the type.
    package init(networks: [IPNetwork], hops: Int = 1, header: Header = .xForwardedFor) {
        self.networks = networks
        self.hops = hops
        self.header = header
    }

    /// Whether `address` is a trusted proxy's.
    package func trusts(_ address: PeerAddress) -> Bool {
        networks.contains { $0.contains(address) }
    }

    /// The client behind a request from `peer` whose forwarding header lines are `values`, in the order they
    /// arrived. From a peer that is not trusted, the peer itself, whatever the headers say.
    package func client(peer: PeerAddress, forwarded values: [Substring]) -> PeerAddress {
        guard trusts(peer) else { return peer }
        var client = peer
        var position = 1  // the peer is hop 1
        for value in values.reversed() {
            var rest = value[...]
            while !rest.isEmpty {
                let entry: Substring
                if let comma = rest.lastIndex(of: ",") {
                    entry = rest[rest.index(after: comma)...]
                    rest = rest[..<comma]
                } else {
                    entry = rest
                    rest = rest[rest.endIndex...]
                }
                // The hop just taken was a proxy, so this entry is its word about who came before it.
                guard let address = Self.address(in: entry, header: header) else { return client }
                client = address
                position += 1
                if position > hops, !trusts(address) { return client }
            }
        }
        return client
    }

    /// The address in one entry of the chain: `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]:4711`, `2001:db8::1`;
    /// for `Forwarded`, the element's `for=` parameter (quoted or not). Nil for anything else.
    static func address(in entry: Substring, header: Header) -> PeerAddress? {
        var node = entry.trimmingSpaces
        if header == .forwarded {
            guard let parameter = node.split(separator: ";").first(where: { $0.trimmingSpaces.lowercased().hasPrefix("for=") }) else {
                return nil
            }
            node = parameter.trimmingSpaces.dropFirst(4)
            if node.first == "\"" {
                guard node.count >= 2, node.last == "\"" else { return nil }
                node = node.dropFirst().dropLast()
            }
        }
        if node.first == "[" {
            // [v6] or [v6]:port
            guard let close = node.firstIndex(of: "]") else { return nil }
            let tail = node[node.index(after: close)...]
            guard tail.isEmpty || (tail.first == ":" && tail.dropFirst().allSatisfy({ $0.isASCII && $0.isNumber })) else { return nil }
            return PeerAddress(parsing: node[node.index(after: node.startIndex)..<close]).flatMap { $0.isIPv6 ? $0 : nil }
        }
        if let colon = node.firstIndex(of: ":"), node.lastIndex(of: ":") == colon {
            // v4:port (one colon: no IPv6 address has exactly one)
            let port = node[node.index(after: colon)...]
            guard !port.isEmpty, port.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return PeerAddress(parsing: node[..<colon]).flatMap { $0.isIPv6 ? nil : $0 }
        }
        return PeerAddress(parsing: node)
    }
}

/// `server.proxyProtocol`: whether connections from trusted proxies start with a PROXY protocol header (haproxy's
/// `send-proxy` / `send-proxy-v2`, AWS NLB, GCP's TCP proxy load balancer), which names the client's address.
package enum ProxyProtocolVersion: String, Sendable, Equatable {
    /// The text form: `PROXY TCP4 192.0.2.1 198.51.100.2 4711 443\r\n`.
    case v1
    /// The binary form, with a 12-byte signature.
    case v2
}

extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
