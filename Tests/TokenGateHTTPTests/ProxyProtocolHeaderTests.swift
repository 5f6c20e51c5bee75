import NIOCore
import Testing
import TokenGateCore

@testable import TokenGateHTTP

/// The PROXY protocol header, byte by byte as haproxy's specification writes it: whole headers name the client,
/// partial ones wait, anything else is refused with a reason, never a crash.
@Suite struct ProxyProtocolHeaderTests {
    func parse(_ bytes: [UInt8], _ version: ProxyProtocolVersion) -> ProxyProtocolHeader.Parse {
        ProxyProtocolHeader.parse(ByteBuffer(bytes: bytes).readableBytesView, version: version)
    }

    static func v2(command: UInt8 = 0x21, family: UInt8 = 0x11, addresses: [UInt8]) -> [UInt8] {
        ProxyProtocolHeader.v2Signature + [command, family, UInt8(addresses.count >> 8), UInt8(addresses.count & 0xFF)] + addresses
    }

    @Test func aV1LineNamesTheClientAndEveryPrefixOfItWaits() {
        let line = Array("PROXY TCP4 203.0.113.9 10.0.0.1 4711 8080\r\nGET / HTTP/1.1\r\n".utf8)
        let headerLength = 43
        #expect(parse(line, .v1) == .header(client: PeerAddress(parsing: "203.0.113.9"), length: headerLength))
        for end in 0..<headerLength { #expect(parse(Array(line.prefix(end)), .v1) == .incomplete, "\(end)") }
        #expect(
            parse(Array("PROXY TCP6 2001:db8::9 2001:db8::1 4711 443\r\n".utf8), .v1)
                == .header(client: PeerAddress(parsing: "2001:db8::9"), length: 45))
        #expect(parse(Array("PROXY UNKNOWN\r\n".utf8), .v1) == .header(client: nil, length: 15))
    }

    @Test(arguments: [
        "GET / HTTP/1.1\r\n", "PROXY TCP4 203.0.113.9 10.0.0.1 4711\r\n", "PROXY TCP4 2001:db8::9 10.0.0.1 1 2\r\n",
        "PROXY TCP4 203.0.113.9 10.0.0.1 4711 99999\r\n", "PROXY TCP5 1.2.3.4 1.2.3.4 1 2\r\n", "PROXY TCP4 1.2.3.4 1.2.3.4 1 2\n",
        "PROXY " + String(repeating: "A", count: 200),
    ])
    func aMalformedV1HeaderIsRefused(text: String) {
        guard case .invalid = parse(Array(text.utf8), .v1) else {
            Issue.record("accepted \(text.debugDescription)")
            return
        }
    }

    @Test func aV2HeaderNamesTheClientSkipsItsTLVsAndEveryPrefixOfItWaits() {
        let ipv4 = Self.v2(addresses: [203, 0, 113, 9, 10, 0, 0, 1, 0x12, 0x67, 0x1F, 0x90] + [0x04, 0x00, 0x02, 0xAB, 0xCD])
        #expect(parse(ipv4 + Array("GET".utf8), .v2) == .header(client: PeerAddress(parsing: "203.0.113.9"), length: ipv4.count))
        for end in 0..<ipv4.count { #expect(parse(Array(ipv4.prefix(end)), .v2) == .incomplete, "\(end)") }
        let source: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + Array(repeating: 0, count: 11) + [9]
        let ipv6 = Self.v2(family: 0x21, addresses: source + Array(repeating: 1, count: 16) + [0, 1, 0, 2])
        #expect(parse(ipv6, .v2) == .header(client: PeerAddress(parsing: "2001:db8::9"), length: ipv6.count))
        // LOCAL (the proxy's own health check) and UNSPEC name nobody.
        #expect(parse(Self.v2(command: 0x20, family: 0x00, addresses: []), .v2) == .header(client: nil, length: 16))
        #expect(parse(Self.v2(family: 0x00, addresses: []), .v2) == .header(client: nil, length: 16))
    }

    @Test func aMalformedV2HeaderIsRefused() {
        var badSignature = Self.v2(addresses: Array(repeating: 1, count: 12))
        badSignature[5] = 0xFF
        let cases: [[UInt8]] = [
            badSignature,
            Self.v2(command: 0x11, addresses: Array(repeating: 1, count: 12)),  // version 1 in a v2 header
            Self.v2(command: 0x22, addresses: Array(repeating: 1, count: 12)),  // command 2
            Self.v2(family: 0x11, addresses: Array(repeating: 1, count: 8)),  // IPv4 block too short
            Self.v2(family: 0x21, addresses: Array(repeating: 1, count: 20)),  // IPv6 block too short
            Self.v2(family: 0x51, addresses: Array(repeating: 1, count: 12)),  // family 5
            ProxyProtocolHeader.v2Signature + [0x21, 0x11, 0xFF, 0xFF],  // 64 KiB announced
            Array("PROXY TCP4 203.0.113.9 10.0.0.1 4711 8080\r\n".utf8),  // v1 where v2 is configured
        ]
        for bytes in cases {
            guard case .invalid = parse(bytes, .v2) else {
                Issue.record("accepted \(bytes)")
                continue
            }
        }
    }
}
