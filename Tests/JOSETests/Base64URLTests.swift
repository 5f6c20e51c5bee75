import Foundation
import JOSE
import Testing

@Suite struct Base64URLTests {
    @Test(arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
        ("foobar", "Zm9vYmFy"),
    ])
    func encodesRFC4648VectorsWithoutPadding(plain: String, encoded: String) {
        #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
        #expect(Base64URL.decode(encoded) == Array(plain.utf8))
    }

    @Test func usesTheURLSafeAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xFB, 0xFF, 0xBF])
    }

    @Test(arguments: [
        "Zg==",  // padding
        "Zm9v+/",  // standard-alphabet characters
        "Zm 9v",  // whitespace
        "Zh",  // non-zero trailing bits: "Zg" is the canonical spelling of "f"
        "Zm9vY",  // a lone 6-bit tail
    ])
    func rejectsNonCanonicalText(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    /// Against Foundation's base64, made URL-safe and unpadded, both ways: every length up to a large RSA signature's.
    @Test func matchesFoundationsBase64WithTheURLAlphabetAndNoPaddingBothWays() {
        let bytes = (0..<520).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 13) }
        for length in 0...bytes.count {
            let slice = Array(bytes.prefix(length))
            let reference = Data(slice).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let written = slice.withUnsafeBytes { Base64URL.withEncoded($0) { String(decoding: $0, as: UTF8.self) } }
            #expect(written == reference)
            #expect(Base64URL.encode(slice) == reference)
            #expect(Base64URL.encode(slice[...]) == reference)
            #expect(Base64URL.encode(slice.lazy.map { $0 }) == reference)  // no contiguous storage
            #expect(reference.utf8.count == Base64URL.encodedCount(of: length))
            #expect(Base64URL.decode(reference) == slice)
            #expect(Base64URL.decode(utf8: reference.utf8.lazy.map { $0 }) == slice)  // no contiguous storage
            // The concrete entry point, over part of a buffer as DeliveredToken calls it.
            let token = Array(("header.payload." + reference).utf8)
            #expect(token.withUnsafeBufferPointer { Base64URL.decode(utf8: UnsafeBufferPointer(rebasing: $0[15...])) } == slice)
        }
    }

    @Test func roundTripsEveryByteValue() {
        let bytes = (0...255).map { UInt8($0) }
        for length in 0...bytes.count {
            let slice = Array(bytes.prefix(length))
            #expect(Base64URL.decode(Base64URL.encode(slice)) == slice)
        }
    }
}
