import Foundation
import JOSE
import Testing

/// Regressions found in the security review of the JOSE engine. Each test fails until its bug is fixed.
@Suite struct ReviewRegressionTests {
    static let now: Int64 = 1_750_000_100

    /// A fresh RSA-2048 public JWK with its exponent replaced (base64url of the big-endian exponent bytes).
    static func rsaJWK(exponent: String, keyID: String = "e1") throws -> [UInt8] {
        let generated = try JSON.parse(try JWSKey.generate(.rs256).publicJWK())
        var jwk = try #require(generated.objectValue)
        jwk["e"] = .string(exponent)
        jwk["kid"] = .string(keyID)
        return JSON.serialize(.object(jwk))
    }

    /// SPKI PEM of an RSA public key with modulus `n` and exponent `e` (big-endian bytes), DER built by hand
    /// because no library will write an exponent of 1.
    static func rsaPublicKeyPEM(modulus: [UInt8], exponent: [UInt8]) -> String {
        func length(_ count: Int) -> [UInt8] {
            if count < 0x80 { return [UInt8(count)] }
            var bytes: [UInt8] = []
            var rest = count
            while rest > 0 {
                bytes.insert(UInt8(rest & 0xFF), at: 0)
                rest >>= 8
            }
            return [0x80 | UInt8(bytes.count)] + bytes
        }
        func tlv(_ tag: UInt8, _ value: [UInt8]) -> [UInt8] { [tag] + length(value.count) + value }
        func integer(_ bytes: [UInt8]) -> [UInt8] {
            let trimmed = Array(bytes.drop { $0 == 0 })
            return tlv(0x02, (trimmed.first ?? 0x80) >= 0x80 ? [0] + trimmed : trimmed)
        }
        let rsaEncryption: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00]
        let publicKey = tlv(0x30, integer(modulus) + integer(exponent))
        let spki = tlv(0x30, tlv(0x30, rsaEncryption) + tlv(0x03, [0] + publicKey))
        let body = Data(spki).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN PUBLIC KEY-----\n\(body)\n-----END PUBLIC KEY-----\n"
    }

    // MARK: RSA public exponent

    @Test(
        .bug(id: "review-jose-1", "RSA keys with e = 1 or an even e load: with e = 1 anyone can forge"),
        arguments: ["AQ", "Ag"])
    func anRSAPublicJWKWithAnExponentOfOneOrAnEvenExponentIsRefusedAsWeak(exponent: String) throws {
        let jwk = try Self.rsaJWK(exponent: exponent)
        #expect(throws: JWSKeyError(.weakKey, "")) { try JWSKey.jwk(jwk) }
        #expect(throws: JWSKeyError(.weakKey, "")) {
            try JWKSet(json: Array(#"{"keys":["#.utf8) + jwk + Array("]}".utf8))
        }
    }

    @Test(.bug(id: "review-jose-1", "RSA keys with e = 1 load from PEM (SPKI) too"))
    func anRSAPublicKeyPEMWithAnExponentOfOneIsRefusedAsWeak() throws {
        let generated = try JSON.parse(try JWSKey.generate(.rs256).publicJWK())
        let modulus = try #require(generated.objectValue?["n"]?.stringValue.flatMap { Base64URL.decode($0) })
        let pem = Self.rsaPublicKeyPEM(modulus: modulus, exponent: [1])
        #expect(throws: JWSKeyError(.weakKey, "")) { try JWSKey.pem(pem) }
    }

    // Made without any private key: with e = 1, s^e mod n = s, so the "signature" is just the PKCS#1 v1.5 encoding
    // 00 01 FF…FF 00 DigestInfo(SHA-256(signing input)) of the 256-byte modulus length. It verifies under every
    // 2048-bit modulus.
    static let tokenForgedForExponentOne =
        "eyJhbGciOiJSUzI1NiIsImtpZCI6ImUxIn0.eyJzdWIiOiJmb3JnZWQiLCJpYXQiOjE3NTAwMDAwMDAsImV4cCI6MTc1MDAwMDYwMH0."
        + "AAH" + String(repeating: "_", count: 269)
        + "ADAxMA0GCWCGSAFlAwQCAQUABCCrHYrQUR_q-olZqzB4ih4h6y0OA-3fqWgt__ZwumI7rg"

    @Test(.bug(id: "review-jose-1", "a token forged with no private key verifies against an e = 1 RSA key"))
    func aTokenForgedForAnExponentOneKeyIsNeverAccepted() throws {
        // Once e = 1 is refused at load time there is no key to verify with, and the test is satisfied.
        guard let key = try? JWSKey.jwk(try Self.rsaJWK(exponent: "AQ")) else { return }
        let verifier = JWTVerifier(keys: try JWKSet(keys: [key]))
        var policy = ValidationPolicy()
        policy.allowedAlgorithms = [.rs256]
        policy.requireKeyID = true
        #expect(throws: JWTValidationError.self) {
            try verifier.verify(Self.tokenForgedForExponentOne, policy: policy, now: Self.now)
        }
    }

    // MARK: RSASSA-PSS signature length

    @Test(
        .bug(id: "review-jose-2", "PS* accepts a signature one byte shorter than the modulus (leading zero dropped)"),
        arguments: [JWSAlgorithm.ps256, .ps384, .ps512])
    func aPSSSignatureShorterThanTheModulusIsRefused(algorithm: JWSAlgorithm) throws {
        let key = try JWSKey.generate(algorithm, keyID: "pss")
        let verifier = JWTVerifier(keys: try JWKSet(keys: [key.publicKey()]))
        var policy = ValidationPolicy()
        policy.requireExpiration = false
        // About one PSS signature in 128 to 256 starts with a zero byte; 4096 tries miss with probability < e^-16.
        for attempt in 0..<4096 {
            let token = try JWSSigner(key: key).sign(claims: ["n": .integer(Int64(attempt))])
            let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            let signature = try #require(Base64URL.decode(parts[2]))
            guard signature.first == 0 else { continue }
            // RFC 8017 section 8.1.2 step 1: a signature that is not k octets long is invalid.
            let shortened = Array(signature.dropFirst())
            let signingInput = Array((parts[0] + "." + parts[1]).utf8)
            #expect(!key.isValidSignature(shortened, for: signingInput))
            #expect(throws: JWTValidationError(.badSignature, "")) {
                let shortToken = parts[0] + "." + parts[1] + "." + Base64URL.encode(shortened)
                _ = try verifier.verify(shortToken, policy: policy, now: 0)
            }
            return
        }
        Issue.record("No \(algorithm) signature with a leading zero byte in 4096 tries")
    }

    // MARK: String comparison (RFC 7519 section 7.3: code point by code point, no normalization)

    static let composed = "caf\u{E9}"  // é as one scalar (NFC)
    static let decomposed = "cafe\u{301}"  // e + combining acute (NFD): Swift `==` calls these equal

    static func signedToken(claims: JSONObject, header: JSONObject, key: JWSKey) throws -> String {
        try JWSSigner(key: key).sign(claims: claims, extraHeader: header)
    }

    @Test(.bug(id: "review-jose-3", "iss compared with Swift String == (canonical equivalence), not code points"))
    func anIssuerThatIsOnlyCanonicallyEquivalentIsTheWrongIssuer() throws {
        let key = try JWSKey.generate(.es256, keyID: "k")
        let verifier = JWTVerifier(keys: try JWKSet(keys: [key.publicKey()]))
        var policy = ValidationPolicy()
        policy.requireExpiration = false
        policy.issuer = Self.composed
        let token = try Self.signedToken(claims: ["iss": .string(Self.decomposed)], header: [:], key: key)
        #expect(throws: JWTValidationError(.wrongIssuer, "")) { try verifier.verify(token, policy: policy, now: 0) }
    }

    @Test(.bug(id: "review-jose-3", "aud compared with Swift String == (canonical equivalence), not code points"))
    func anAudienceThatIsOnlyCanonicallyEquivalentIsTheWrongAudience() throws {
        let key = try JWSKey.generate(.es256, keyID: "k")
        let verifier = JWTVerifier(keys: try JWKSet(keys: [key.publicKey()]))
        var policy = ValidationPolicy()
        policy.requireExpiration = false
        policy.audiences = [Self.composed]
        let token = try Self.signedToken(claims: ["aud": .string(Self.decomposed)], header: [:], key: key)
        #expect(throws: JWTValidationError(.wrongAudience, "")) { try verifier.verify(token, policy: policy, now: 0) }
    }

    @Test(.bug(id: "review-jose-3", "kid looked up with Swift String == (canonical equivalence), not code points"))
    func aKidThatIsOnlyCanonicallyEquivalentIsUnknown() throws {
        let key = try JWSKey.generate(.es256, keyID: Self.composed)
        let verifier = JWTVerifier(keys: try JWKSet(keys: [key.publicKey()]))
        var policy = ValidationPolicy()
        policy.requireExpiration = false
        let token = try Self.signedToken(claims: [:], header: ["kid": .string(Self.decomposed)], key: key)
        #expect(throws: JWTValidationError(.unknownKid, "")) { try verifier.verify(token, policy: policy, now: 0) }
    }

    @Test(.bug(id: "review-jose-4", "typ compared with Unicode lowercased(), not ASCII case folding"))
    func typIsComparedASCIICaseInsensitivelyOnly() throws {
        let key = try JWSKey.generate(.es256, keyID: "k")
        let verifier = JWTVerifier(keys: try JWKSet(keys: [key.publicKey()]))
        var policy = ValidationPolicy()
        policy.requireExpiration = false
        policy.requiredType = "kb+jwt"
        // U+212A KELVIN SIGN lowercases to ASCII "k" in Unicode, but is not an ASCII case variant of it.
        let token = try Self.signedToken(claims: [:], header: ["typ": "\u{212A}B+JWT"], key: key)
        #expect(throws: JWTValidationError(.wrongType, "")) { try verifier.verify(token, policy: policy, now: 0) }
        // The ASCII case variant stays accepted.
        let ascii = try Self.signedToken(claims: [:], header: ["typ": "KB+JWT"], key: key)
        _ = try verifier.verify(ascii, policy: policy, now: 0)
    }
}
