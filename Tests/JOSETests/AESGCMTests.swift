import Foundation
import Testing

@testable import OpenSSLPrimitives

@Suite(.timeLimit(.minutes(5)))
struct AESGCMTests {
    static let key = [UInt8](0..<32)

    @Test func aSealedValueOpensOnlyWithItsKeyAndAssociatedData() throws {
        let plaintext = Array("eyJhbGciOiJSUzI1NiJ9.e30.c2ln".utf8)
        let box = try AESGCM.seal(plaintext, key: Self.key, associatedData: Array("tokengate:token:a".utf8))
        #expect(box.count == 12 + plaintext.count + 16)
        #expect(try AESGCM.open(box, key: Self.key, associatedData: Array("tokengate:token:a".utf8)) == plaintext)
        // Two seals of one value differ (fresh nonce), and neither shows the plaintext.
        let again = try AESGCM.seal(plaintext, key: Self.key, associatedData: Array("tokengate:token:a".utf8))
        #expect(again != box)
        #expect(!String(decoding: box, as: UTF8.self).contains("eyJ"))

        #expect(throws: AESGCM.Failure.authenticationFailed) {
            try AESGCM.open(box, key: Self.key, associatedData: Array("tokengate:token:b".utf8))
        }
        var otherKey = Self.key
        otherKey[0] ^= 1
        #expect(throws: AESGCM.Failure.authenticationFailed) { try AESGCM.open(box, key: otherKey, associatedData: Array("tokengate:token:a".utf8)) }
        for index in [0, 12, box.count - 1] {
            var tampered = box
            tampered[index] ^= 0x80
            #expect(throws: AESGCM.Failure.authenticationFailed) {
                try AESGCM.open(tampered, key: Self.key, associatedData: Array("tokengate:token:a".utf8))
            }
        }
        #expect(throws: AESGCM.Failure.truncated) { try AESGCM.open(Array(box.prefix(27)), key: Self.key) }
        #expect(throws: AESGCM.Failure.invalidKeyLength(16)) { try AESGCM.seal(plaintext, key: Array(Self.key.prefix(16))) }
    }

    /// NIST SP 800-38D / McGrew–Viega test case 16 (AES-256, 96-bit IV, with AAD).
    @Test func theKnownAnswerMatches() throws {
        func hex(_ text: String) -> [UInt8] { Self.bytes(hex: text)! }
        let key = hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let nonce = hex("cafebabefacedbaddecaf888")
        let plaintext = hex(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
        let aad = hex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let ciphertext = hex(
            "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662")
        let tag = hex("76fc6ece0f4e1768cddf8853bb2d551b")
        let box = try AESGCM.seal(plaintext, key: key, nonce: nonce, associatedData: aad)
        #expect(box == nonce + ciphertext + tag)
        #expect(try AESGCM.open(box, key: key, associatedData: aad) == plaintext)
    }

    /// Python's `cryptography` opens what OpenSSL sealed here, and the other way round.
    @Test func pythonCryptographyReadsAndWritesTheSameBoxes() async throws {
        let program = #"""
            import sys
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            key = bytes(range(32))
            box = bytes.fromhex(open(sys.argv[1]).read())
            print(AESGCM(key).decrypt(box[:12], box[12:], b"tokengate:token:x").decode())
            nonce = bytes(range(12))
            print((nonce + AESGCM(key).encrypt(nonce, b"from python", b"tokengate:token:y")).hex())
            """#
        try await withTemporaryDirectory { directory in
            let box = try AESGCM.seal(Array("from swift".utf8), key: Self.key, associatedData: Array("tokengate:token:x".utf8))
            try directory.write(box.map { String(format: "%02x", $0) }.joined(), to: "box.hex")
            let output = try await Interop.python(program, ["box.hex"], in: directory)
            try #require(output.succeeded, "\(output)")
            let lines = output.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first == "from swift")
            let fromPython = try #require(lines.last.flatMap(Self.bytes(hex:)))
            #expect(try AESGCM.open(fromPython, key: Self.key, associatedData: Array("tokengate:token:y".utf8)) == Array("from python".utf8))
        }
    }

    static func bytes(hex text: String) -> [UInt8]? { HexBytes.decode(text) }
}
