#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A caller's IP address as a number, so a per-address bucket costs no string: IPv4 in the low 32 bits, IPv6 as
/// its 128 bits. An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, what a dual-stack socket reports for an IPv4
/// client) is the IPv4 address: one host, one bucket.
package struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address bits.
    package let bits: UInt128
    /// Whether it is IPv6 (an IPv4 address and the IPv6 address with the same low bits differ).
    package let isIPv6: Bool

    private init(bits: UInt128, isIPv6: Bool) {
        self.bits = bits
        self.isIPv6 = isIPv6
    }

    /// An IPv4 address in host byte order.
    package init(ipv4: UInt32) {
        self.init(bits: UInt128(ipv4), isIPv6: false)
    }

    /// An IPv6 address from its 16 bytes, most significant first.
    package init(ipv6 bytes: some Collection<UInt8>) {
        let value = bytes.reduce(0) { $0 << 8 | UInt128($1) }
        self.init(bits: value >> 32 == 0xffff ? value & 0xffff_ffff : value, isIPv6: value >> 32 != 0xffff)
    }

    /// An address in its text form: a dotted quad or an IPv6 address (RFC 4291, `::` and a trailing dotted quad
    /// allowed), with no port, brackets or zone. Nil for anything else.
    package init?(parsing text: some StringProtocol) {
        // The longest IPv6 text form is 45 bytes; anything longer is not an address and is not copied.
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        let string = String(text)
        if !string.utf8.contains(UInt8(ascii: ":")) {
            var address = in_addr()
            guard inet_pton(AF_INET, string, &address) == 1 else { return nil }
            self.init(ipv4: UInt32(bigEndian: address.s_addr))
        } else {
            var address = in6_addr()
            guard inet_pton(AF_INET6, string, &address) == 1 else { return nil }
            let bytes = withUnsafeBytes(of: address) { Array($0) }
            self.init(ipv6: bytes)
        }
    }

    /// Dotted quad, or eight groups of hex (uncompressed).
    package var description: String {
        if !isIPv6 { return (0..<4).map { String(UInt8(truncatingIfNeeded: bits >> (24 - 8 * $0))) }.joined(separator: ".") }
        return (0..<8).map { String(UInt16(truncatingIfNeeded: bits >> (112 - 16 * $0)), radix: 16) }.joined(separator: ":")
    }
}

/// A block of addresses in CIDR notation: `10.0.0.0/8`, `2001:db8::/32`, or one address (`/32`, `/128` implied).
package struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    /// The first address of the block (the host bits are zero).
    package let base: PeerAddress
    /// How many leading bits every address of the block shares.
    package let prefixLength: Int

    /// Parses `address/length` or a lone address. Host bits must be zero (`10.1.2.3/8` is refused: it usually
    /// means a typo, and silently widening it would trust more than was written).
    package init?(parsing text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = PeerAddress(parsing: parts[0]) else { return nil }
        let width = address.isIPv6 ? 128 : 32
        var length = width
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), (0...width).contains(parsed), parts[1].allSatisfy(\.isASCII) else { return nil }
            length = parsed
        }
        guard address.bits & ~Self.mask(length, width: width) == 0 else { return nil }
        base = address
        prefixLength = length
    }

    /// Whether `address` is in the block (an IPv4 address is never in an IPv6 block, nor the reverse).
    package func contains(_ address: PeerAddress) -> Bool {
        guard address.isIPv6 == base.isIPv6 else { return false }
        return address.bits & Self.mask(prefixLength, width: base.isIPv6 ? 128 : 32) == base.bits
    }

    package var description: String { "\(base)/\(prefixLength)" }

    private static func mask(_ length: Int, width: Int) -> UInt128 {
        guard length > 0 else { return 0 }
        let ones: UInt128 = width == 128 ? .max : (1 << 32) - 1
        return ones & ~((1 << UInt128(width - length)) - 1)
    }
}
