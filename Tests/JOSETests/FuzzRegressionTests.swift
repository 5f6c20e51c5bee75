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
        // The armour is assembled so that secret scanners do not take this file for a committed key: the key
        // inside is made above, at run time.
        let label = "PRIVATE" + " KEY"
        return "-----BEGIN \(label)-----\n\(body)\n-----END \(label)-----\n"
    }

    @Test(
        .bug(
            id: 13,
            "fuzz-pem: an EC private key PEM whose public point is another key's loaded, and signed with a key its own public half could not verify"),
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

/// fuzz-pem found an "RSA PUBLIC KEY" whose modulus has the factor 1033 that loaded most of the time and was refused
/// now and then: OpenSSL's check divides only by primes up to 751 and leaves the rest to randomized Miller-Rabin.
@Suite(.bug(id: 13, "fuzz-pem: an RSA modulus with the factor 1033 was accepted or refused by chance"))
struct RSASmallFactorTests {
    /// A 2059-bit modulus: 1033 times a real RSA-2048 modulus (so no factor up to 751), big-endian.
    static func modulusWithFactor1033() throws -> [UInt8] {
        let jwk = try #require(try JSON.parse(try JWSKey.generate(.rs256).publicJWK()).objectValue)
        let encoded = try #require(jwk["n"]?.stringValue)
        var modulus = try #require(Base64URL.decode(encoded))
        var carry: UInt32 = 0
        for index in modulus.indices.reversed() {
            let product = UInt32(modulus[index]) * 1033 + carry
            modulus[index] = UInt8(product & 0xFF)
            carry = product >> 8
        }
        while carry > 0 {
            modulus.insert(UInt8(carry & 0xFF), at: 0)
            carry >>= 8
        }
        return modulus
    }

    @Test func modulusWithASmallFactorIsRefusedEveryTime() throws {
        let pem = ReviewRegressionTests.rsaPublicKeyPEM(modulus: try Self.modulusWithFactor1033(), exponent: [1, 0, 1])
        // Before the fix OpenSSL's randomized check passed this key every time in 30 tries.
        for _ in 0..<20 {
            #expect(throws: JWSKeyError(.weakKey, "")) { try JWSKey.pem(pem) }
        }
    }
}
