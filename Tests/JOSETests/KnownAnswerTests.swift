import JOSE
import Testing

@Suite struct KnownAnswerTests {
    // Before the RFC tokens' exp (1300819380), so the full claim checks pass.
    static let rfcNow: Int64 = 1_300_819_000

    @Test func rs256SignatureEqualsRFC7515AppendixA2() throws {
        let key = try JWSKey.jwk(Array(RFCVectors.rs256Key.utf8), algorithm: .rs256)
        #expect(key.isPrivate)
        #expect(key.summary == "RSA 2048")
        let token = try JWSSigner(key: key).sign(headerJSON: RFCVectors.rs256Header, payload: RFCVectors.payload)
        #expect(token == RFCVectors.rs256Token)
    }

    @Test func rs256RFCTokenVerifiesWithThePublicHalf() throws {
        let key = try JWSKey.jwk(Array(RFCVectors.rs256Key.utf8), algorithm: .rs256).publicKey()
        #expect(!key.isPrivate)
        let verified = try JWTVerifier(keys: JWKSet(keys: [key]))
            .verify(RFCVectors.rs256Token, policy: ValidationPolicy(), now: Self.rfcNow)
        #expect(verified.algorithm == .rs256)
        #expect(verified.payload == RFCVectors.payload)
        #expect(verified.claims["iss"] == "joe")
        #expect(verified.expiresAt == 1_300_819_380)
    }

    @Test func es256RFC7515AppendixA3Verifies() throws {
        let key = try JWSKey.jwk(Array(RFCVectors.es256Key.utf8)).publicKey()
        #expect(key.algorithm == .es256)
        let verified = try JWTVerifier(keys: JWKSet(keys: [key]))
            .verify(RFCVectors.es256Token, policy: ValidationPolicy(), now: Self.rfcNow)
        #expect(verified.claims["http://example.com/is_root"] == .bool(true))
    }

    @Test func es256RFCSignatureFailsOnceTheInputChanges() throws {
        let key = try JWSKey.jwk(Array(RFCVectors.es256Key.utf8))
        let parts = RFCVectors.es256Token.split(separator: ".")
        let signature = try #require(Base64URL.decode(parts[2]))
        #expect(key.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)))
        #expect(!key.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])x".utf8)))
    }

    @Test func ed25519SignatureEqualsRFC8037AppendixA4() throws {
        let key = try JWSKey.jwk(Array(RFCVectors.ed25519Key.utf8))
        #expect(key.algorithm == .edDSA)
        let token = try JWSSigner(key: key).sign(
            headerJSON: RFCVectors.ed25519Header, payload: RFCVectors.ed25519Payload)
        #expect(token == RFCVectors.ed25519Token)
        var policy = ValidationPolicy()
        policy.signatureOnly = true
        let verified = try JWTVerifier(keys: JWKSet(keys: [key.publicKey()]))
            .verify(RFCVectors.ed25519Token, policy: policy, now: 0)
        #expect(verified.payload == RFCVectors.ed25519Payload)
        #expect(verified.claims.count == 0)
    }

    @Test func hs256RFC7515AppendixA1Verifies() throws {
        let key = try JWSKey.jwk(Array(RFCVectors.hs256Key.utf8), algorithm: .hs256)
        let verified = try JWTVerifier(keys: JWKSet(keys: [key]))
            .verify(RFCVectors.hs256Token, policy: ValidationPolicy(), now: Self.rfcNow)
        #expect(verified.header["typ"] == "JWT")
    }

    @Test func publicJWKOfTheRFCKeysRoundTrips() throws {
        for text in [RFCVectors.rs256Key, RFCVectors.es256Key, RFCVectors.ed25519Key] {
            let key = try JWSKey.jwk(Array(text.utf8))
            let published = try JWSKey.jwk(key.publicJWK())
            #expect(!published.isPrivate)
            #expect(try published.publicJWK() == key.publicJWK())
            #expect(published.algorithm == key.algorithm)
        }
    }
}
