import OpenSSLPrimitives
import Testing

/// Digests against the FIPS 180-2 appendix vectors, not only against themselves.
@Suite struct DigestTests {
    static func hex(_ bytes: [UInt8]) -> String { HexBytes.encode(bytes) }

    @Test(arguments: [
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
    ])
    func sha1MatchesFIPS180Vectors(input: String, expected: String) throws {
        #expect(Self.hex(try Digest.sha1(Array(input.utf8))) == expected)
    }

    @Test func sha1OfAMillionAsMatchesFIPS180() throws {
        let input = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(Self.hex(try Digest.sha1(input)) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    @Test func sha256OfABCMatchesFIPS180() throws {
        #expect(
            Self.hex(try Digest.sha256(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
