import JOSE
import OpenSSLPrimitives
import Testing

/// Key-loading rules added after the security review: RSA exponent bounds, key_ops, empty key IDs, exact kid
/// comparison, BOM handling and service-account fields.
@Suite struct KeyHardeningTests {
    @Test(arguments: [
        "AA",  // e = 0
        "BA",  // e = 4: even
        "AQAAAAE",  // e = 2^32 + 1: odd but over the 2^32 cap
    ])
    func anRSAExponentOfZeroEvenOrOver2To32IsWeak(exponent: String) throws {
        let jwk = try ReviewRegressionTests.rsaJWK(exponent: exponent)
        #expect(throws: JWSKeyError(.weakKey, "")) { try JWSKey.jwk(jwk) }
    }

    @Test func anRSAPublicKeyPEMWithAnEvenExponentIsWeak() throws {
        let generated = try JSON.parse(try JWSKey.generate(.rs256).publicJWK())
        let modulus = try #require(generated.objectValue?["n"]?.stringValue.flatMap { Base64URL.decode($0) })
        let pem = ReviewRegressionTests.rsaPublicKeyPEM(modulus: modulus, exponent: [0x01, 0x00, 0x00])
        #expect(throws: JWSKeyError(.weakKey, "")) { try JWSKey.pem(pem, algorithm: .ps256) }
        // The same modulus with the usual exponent loads: only the exponent was wrong.
        _ = try JWSKey.pem(ReviewRegressionTests.rsaPublicKeyPEM(modulus: modulus, exponent: [0x01, 0x00, 0x01]))
    }

    @Test func keyOperationsMustAllowSigningOrVerifying() throws {
        var jwk = try #require(try JSON.parse(try JWSKey.generate(.es256).publicJWK()).objectValue)
        jwk["key_ops"] = .array(["encrypt", "wrapKey"])
        #expect(throws: JWSKeyError(.encryptionKey, "")) { try JWSKey.jwk(JSON.serialize(.object(jwk))) }
        jwk["key_ops"] = "verify"
        #expect(throws: JWSKeyError(.malformedKey, "")) { try JWSKey.jwk(JSON.serialize(.object(jwk))) }
        jwk["key_ops"] = .array(["verify"])
        _ = try JWSKey.jwk(JSON.serialize(.object(jwk)))
    }

    @Test func anEmptyKeyIDIsRefusedEverywhere() throws {
        var jwk = try #require(try JSON.parse(try JWSKey.generate(.es256).publicJWK()).objectValue)
        jwk["kid"] = ""
        #expect(throws: JWSKeyError(.malformedKey, "")) { try JWSKey.jwk(JSON.serialize(.object(jwk))) }
        #expect(throws: JWSKeyError(.malformedKey, "")) { try JWSKey.generate(.edDSA, keyID: "") }
        #expect(throws: JWSKeyError(.malformedKey, "")) {
            try JWSKey.hmac(secret: [UInt8](repeating: 1, count: 32), algorithm: .hs256, keyID: "")
        }
    }

    @Test func keyIDsThatAreOnlyCanonicallyEquivalentAreTwoKeys() throws {
        let composed = try JWSKey.generate(.es256, keyID: "caf\u{E9}")
        let decomposed = try JWSKey.generate(.es256, keyID: "cafe\u{301}").publicKey()
        let set = try JWKSet(keys: [composed, decomposed])
        #expect(set.key(withID: "cafe\u{301}") === decomposed)
        #expect(set.key(withID: "caf\u{E9}") === composed)
        // Byte-identical kids are still duplicates.
        #expect(throws: JWSKeyError(.duplicateKeyID, "")) { try JWKSet(keys: [composed, composed.publicKey()]) }
    }

    @Test func aDuplicateKeyIDIsQuotedEscapedInTheMessage() throws {
        let kid = "line\nbreak" + String(repeating: "x", count: 100)
        let key = try JWSKey.generate(.edDSA, keyID: kid)
        let error = try #require(throws: JWSKeyError.self) { try JWKSet(keys: [key, key]) }
        #expect(!error.message.contains("\n"))
        #expect(error.message.contains("\\u000A"))
        #expect(!error.message.contains(String(repeating: "x", count: 40)))
    }

    @Test func onlyAnExactByteOrderMarkIsSkippedInAKeyFile() throws {
        let jwk = try JWSKey.generate(.es256).publicJWK()
        #expect(try KeyFile.load(bytes: [0xEF, 0xBB, 0xBF] + Array(" \n".utf8) + jwk).count == 1)
        // Stray bytes of a mark are not whitespace: the file is neither JSON nor PEM.
        #expect(throws: JWSKeyError(.malformedKey, "")) { try KeyFile.load(bytes: [0xBB] + jwk) }
        #expect(throws: JWSKeyError(.malformedKey, "")) { try KeyFile.load(bytes: [0x20, 0xEF, 0xBB, 0xBF] + jwk) }
    }

    @Test(arguments: ["private_key_id", "client_email"])
    func aServiceAccountWithAnEmptyIdentityFieldIsRefused(field: String) throws {
        let account = try ServiceAccountKey.generate(projectID: "p", clientEmail: "svc@p.iam.gserviceaccount.com")
        var object = try #require(try JSON.parse(account.json()).objectValue)
        object[field] = ""
        #expect(throws: JWSKeyError(.malformedKey, "")) { try ServiceAccountKey(json: JSON.serialize(.object(object))) }
    }

    @Test func constantTimeEqualityAgreesWithArrayEquality() {
        #expect(ConstantTime.isEqual([], []))
        #expect(!ConstantTime.isEqual([], [0]))
        #expect(!ConstantTime.isEqual([1, 2], [1, 3]))
        #expect(ConstantTime.isEqual([1, 2], [1, 2]))
    }
}
