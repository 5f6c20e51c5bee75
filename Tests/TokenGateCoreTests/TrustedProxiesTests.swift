import Testing

@testable import TokenGateCore

/// Finding the client behind trusted proxies: only a trusted peer's headers are read, the chain is walked from the
/// right, and nothing a client writes to the left of the first untrusted hop is believed.
@Suite struct TrustedProxiesTests {
    static func address(_ text: String) -> PeerAddress { PeerAddress(parsing: text)! }
    static let proxies = TrustedProxies(networks: ["10.0.0.0/8", "2001:db8::/32"].map { IPNetwork(parsing: $0)! })

    func client(_ peer: String, _ values: [Substring], _ proxies: TrustedProxies = Self.proxies) -> String {
        proxies.client(peer: Self.address(peer), forwarded: values).description
    }

    @Test func addressesAndBlocksParseStrictly() {
        #expect(PeerAddress(parsing: "192.0.2.1")?.description == "192.0.2.1")
        #expect(PeerAddress(parsing: "::ffff:192.0.2.1")?.description == "192.0.2.1")
        #expect(PeerAddress(parsing: "2001:db8::1")?.isIPv6 == true)
        for bad in ["", "192.0.2", "192.0.2.256", "1.2.3.4.5", "unknown", "[::1]", "::1%eth0", String(repeating: "1", count: 60)] {
            #expect(PeerAddress(parsing: bad) == nil, "\(bad)")
        }
        #expect(IPNetwork(parsing: "10.0.0.0/8")?.contains(Self.address("10.255.1.2")) == true)
        #expect(IPNetwork(parsing: "10.0.0.0/8")?.contains(Self.address("11.0.0.1")) == false)
        #expect(IPNetwork(parsing: "127.0.0.1")?.prefixLength == 32)
        #expect(IPNetwork(parsing: "2001:db8::/32")?.contains(Self.address("2001:db8:ffff::1")) == true)
        #expect(IPNetwork(parsing: "2001:db8::/32")?.contains(Self.address("10.0.0.1")) == false)
        // Host bits set, a length past the family's width, or no length after the slash: refused.
        for bad in ["10.1.2.3/8", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/x", "::/129"] {
            #expect(IPNetwork(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test func anUntrustedPeerIsTheClientWhateverItSends() {
        #expect(client("192.0.2.7", ["203.0.113.9"]) == "192.0.2.7")
    }

    @Test func theRightmostUntrustedHopIsTheClientAndSpoofedEntriesToItsLeftAreIgnored() {
        #expect(client("10.0.0.1", ["203.0.113.9"]) == "203.0.113.9")
        // The client wrote 1.1.1.1 itself; the proxy appended the address it saw.
        #expect(client("10.0.0.1", ["1.1.1.1, 203.0.113.9"]) == "203.0.113.9")
        // Two proxies of ours, then the client; repeated header lines are one list in order.
        #expect(client("10.0.0.1", ["1.1.1.1, 203.0.113.9", "10.2.3.4"]) == "203.0.113.9")
        // Ports and brackets as some proxies write them.
        #expect(client("10.0.0.1", ["203.0.113.9:4711"]) == "203.0.113.9")
        #expect(client("10.0.0.1", ["[2001:db9::5]:4711"]) == "2001:db9:0:0:0:0:0:5")
        // Every hop a proxy: the farthest.
        #expect(client("10.0.0.1", ["10.9.9.9, 10.8.8.8"]) == "10.9.9.9")
    }

    @Test func garbageWrittenByATrustedProxyStopsTheWalkAtTheLastAddressKnown() {
        #expect(client("10.0.0.1", ["unknown"]) == "10.0.0.1")
        #expect(client("10.0.0.1", ["203.0.113.9, garbage, 10.2.3.4"]) == "10.2.3.4")
        #expect(client("10.0.0.1", [""]) == "10.0.0.1")
        // Garbage left of the client is the client's own text, never read.
        #expect(client("10.0.0.1", ["\u{1B}[31m, ;;;, 203.0.113.9"]) == "203.0.113.9")
    }

    @Test func hopsTrustProxiesByPositionWhoseAddressesCannotBeListed() {
        // A cloud load balancer: "client, balancer-address", from a peer in its published range.
        var proxies = Self.proxies
        proxies.hops = 2
        #expect(client("10.0.0.1", ["1.1.1.1, 203.0.113.9, 198.51.100.3"], proxies) == "203.0.113.9")
        #expect(client("10.0.0.1", ["198.51.100.3"], proxies) == "198.51.100.3")
        #expect(client("192.0.2.7", ["203.0.113.9, 198.51.100.3"], proxies) == "192.0.2.7")
    }

    @Test func theForwardedHeaderIsReadOnlyWhenConfigured() {
        var proxies = Self.proxies
        proxies.header = .forwarded
        #expect(client("10.0.0.1", ["for=1.1.1.1, for=203.0.113.9;proto=https;by=10.0.0.1"], proxies) == "203.0.113.9")
        #expect(client("10.0.0.1", ["For=\"[2001:db9::5]:4711\""], proxies) == "2001:db9:0:0:0:0:0:5")
        #expect(client("10.0.0.1", ["for=_hidden"], proxies) == "10.0.0.1")
        #expect(client("10.0.0.1", ["proto=https"], proxies) == "10.0.0.1")
    }

    @Test func twoHundredAddressesCostOneWalkThatStopsAtTheClient() {
        let many = (0..<200).map { "198.51.100.\($0 % 250)" }.joined(separator: ", ")
        #expect(client("10.0.0.1", [many[...]]) == "198.51.100.199")
    }
}
