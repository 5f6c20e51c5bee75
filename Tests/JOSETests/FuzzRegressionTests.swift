import Foundation
import JOSE
import Testing

/// Inputs the libFuzzer targets in Fuzz/ found (scripts/fuzz), kept as tests. Each failed before its fix.
@Suite struct FuzzRegressionTests {
    /// The PKCS#8 PEM of a fresh private key for `algorithm` whose public point is replaced by another key's. OpenSSL
    /// writes the public point last in the DER, so the splice keeps every length intact.
    static func privateKeyWithForeignPublicPoint(_ algorithm: JWSAlgorithm) throws -> String {
        func der(_ pem: String) throws -> [UInt8] {
            let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
            return [UInt8](try #require(Data(base64Encoded: body)))
        }
        let mine = try der(try JWSKey.generate(algorithm).privateKeyPEM())
        let other = try der(try JWSKey.generate(algorithm).privateKeyPEM())
        let coordinates = 2 * ((algorithm == .es512 ? 521 : algorithm == .es384 ? 384 : 256) + 7) / 8
        let spliced = mine.dropLast(coordinates) + other.suffix(coordinates)
        let body = Data(spliced).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN PRIVATE KEY-----\n\(body)\n-----END PRIVATE KEY-----\n"
    }

    @Test(
        .bug(id: 13, "fuzz-pem: an EC private key PEM whose public point is another key's loaded, and signed with a key its own public half could not verify"),
        arguments: [JWSAlgorithm.es256, .es384, .es512]
    )
    func privateKeyPEMWhosePublicPointIsAnotherKeysIsRefused(_ algorithm: JWSAlgorithm) throws {
        let pem = try Self.privateKeyWithForeignPublicPoint(algorithm)
        #expect(throws: JWSKeyError(.malformedKey, "")) { try JWSKey.pem(pem) }
        #expect(throws: JWSKeyError(.malformedKey, "")) { try KeyFile.load(bytes: Array(pem.utf8)) }
    }

    @Test func matchingPrivateKeyPEMStillLoadsAndVerifies() throws {
        let key = try JWSKey.pem(try JWSKey.generate(.es512).privateKeyPEM())
        let signature = try key.signature(for: Array("input".utf8))
        #expect(key.publicKey().isValidSignature(signature, for: Array("input".utf8)))
    }
}
