import NIOCore
import TokenGateCore

/// The PROXY protocol header a proxy sends before a connection's first byte (haproxy's specification,
/// `doc/proxy-protocol.txt`): who the client is, since the connection itself comes from the proxy.
///
/// Parsed from the front of what has arrived so far. Only the source address is kept; ports, the destination and
/// v2's TLVs are skipped. A `LOCAL` (v2) or `UNKNOWN` (v1) header, which a proxy sends for its own health checks,
/// names nobody: the connection's peer stays the client.
enum ProxyProtocolHeader {
    /// What the bytes so far say.
    enum Parse: Equatable {
        /// A whole header, `length` bytes long, naming `client` (nil: the proxy's own connection).
        case header(client: PeerAddress?, length: Int)
        /// A valid beginning; more bytes are needed.
        case incomplete
        /// Not a header of this version; the reason is for the log.
        case invalid(String)
    }

    /// v1's longest line, `\r\n` included.
    static let maxV1Length = 107
    /// The longest v2 header accepted: the 16 fixed bytes and addresses and TLVs up to 4 KiB.
    static let maxV2Length = 16 + 4096
    /// v2's 12-byte signature.
    static let v2Signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
    private static let v1Prefix = Array("PROXY ".utf8)

    /// Parses the `version` header at the start of `bytes`.
    static func parse(_ bytes: ByteBufferView, version: ProxyProtocolVersion) -> Parse {
        switch version {
        case .v1: parseV1(bytes)
        case .v2: parseV2(bytes)
        }
    }

    private static func parseV1(_ bytes: ByteBufferView) -> Parse {
        let prefixLength = min(bytes.count, v1Prefix.count)
        guard bytes.prefix(prefixLength).elementsEqual(v1Prefix.prefix(prefixLength)) else {
            return .invalid("the connection does not start with a PROXY v1 header")
        }
        let window = bytes.prefix(maxV1Length)
        guard let lineFeed = window.firstIndex(of: UInt8(ascii: "\n")) else {
            return bytes.count >= maxV1Length ? .invalid("PROXY v1 line longer than \(maxV1Length) bytes") : .incomplete
        }
        guard lineFeed > window.startIndex, bytes[lineFeed - 1] == UInt8(ascii: "\r") else {
            return .invalid("PROXY v1 line not ended by CRLF")
        }
        let length = lineFeed - bytes.startIndex + 1
        guard let line = String(validating: bytes[bytes.startIndex..<(lineFeed - 1)], as: UTF8.self) else {
            return .invalid("PROXY v1 line is not text")
        }
        let fields = line.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count >= 2 else { return .invalid("PROXY v1 line without a protocol") }
        switch fields[1] {
        case "UNKNOWN":
            return .header(client: nil, length: length)
        case "TCP4", "TCP6":
            guard fields.count == 6, let source = PeerAddress(parsing: fields[2]), let destination = PeerAddress(parsing: fields[3]),
                source.isIPv6 == (fields[1] == "TCP6"), destination.isIPv6 == source.isIPv6,
                isPort(fields[4]), isPort(fields[5])
            else {
                return .invalid("malformed PROXY v1 \(fields[1]) line")
            }
            return .header(client: source, length: length)
        default:
            return .invalid("PROXY v1 protocol is neither TCP4, TCP6 nor UNKNOWN")
        }
    }

    private static func parseV2(_ bytes: ByteBufferView) -> Parse {
        let prefixLength = min(bytes.count, v2Signature.count)
        guard bytes.prefix(prefixLength).elementsEqual(v2Signature.prefix(prefixLength)) else {
            return .invalid("the connection does not start with a PROXY v2 signature")
        }
        guard bytes.count >= 16 else { return .incomplete }
        let start = bytes.startIndex
        let versionAndCommand = bytes[start + 12]
        guard versionAndCommand >> 4 == 2 else { return .invalid("PROXY v2 header with version \(versionAndCommand >> 4)") }
        let command = versionAndCommand & 0x0F
        guard command <= 1 else { return .invalid("PROXY v2 header with unknown command \(command)") }
        let family = bytes[start + 13]
        let addressLength = Int(bytes[start + 14]) << 8 | Int(bytes[start + 15])
        let length = 16 + addressLength
        guard length <= maxV2Length else { return .invalid("PROXY v2 header of \(length) bytes, over \(maxV2Length)") }
        guard bytes.count >= length else { return .incomplete }
        // LOCAL: the proxy's own connection (a health check); the addresses, if any, are to be ignored.
        guard command == 1 else { return .header(client: nil, length: length) }
        let addresses = bytes[(start + 16)..<(start + length)]
        switch family >> 4 {
        case 0x1:
            guard addressLength >= 12 else { return .invalid("PROXY v2 IPv4 block shorter than 12 bytes") }
            let source = addresses.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return .header(client: PeerAddress(ipv4: source), length: length)
        case 0x2:
            guard addressLength >= 36 else { return .invalid("PROXY v2 IPv6 block shorter than 36 bytes") }
            return .header(client: PeerAddress(ipv6: addresses.prefix(16)), length: length)
        case 0x0, 0x3:
            // UNSPEC or a Unix socket: no IP address to take; the peer stays the client.
            return .header(client: nil, length: length)
        default:
            return .invalid("PROXY v2 header with unknown address family \(family >> 4)")
        }
    }

    private static func isPort(_ text: Substring) -> Bool {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(text) else { return false }
        return port <= 65535
    }
}
