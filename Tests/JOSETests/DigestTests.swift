import OpenSSLPrimitives
import Testing

/// Digests against the FIPS 180-2 appendix vectors, HMAC-SHA256 against RFC 4231's, not only against themselves.
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

    /// RFC 4231 test cases 1, 2 and 6 (a key longer than SHA-256's block, hashed first).
    @Test(arguments: [
        ([UInt8](repeating: 0x0B, count: 20), "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (Array("Jefe".utf8), "what do ya want for nothing?", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        (
            [UInt8](repeating: 0xAA, count: 131), "Test Using Larger Than Block-Size Key - Hash Key First",
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        ),
    ])
    func hmacSHA256MatchesRFC4231Vectors(key: [UInt8], message: String, expected: String) throws {
        #expect(Self.hex(try HMAC.sha256(key: key, Array(message.utf8))) == expected)
    }
}
