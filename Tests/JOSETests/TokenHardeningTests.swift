import JOSE
import Testing

/// Token-side rules added after the security review: exact RSA signature length, kid-less key choice, exact JSON
/// member names, sanitized error messages, size caps and header types.
@Suite struct TokenHardeningTests {
    @Test(arguments: [JWSAlgorithm.rs256, .ps256])
    func anRSASignatureOfTheWrongLengthIsRefused(algorithm: JWSAlgorithm) throws {
        let key = try JWSKey.generate(algorithm)
        let input = Array("e30.e30".utf8)
        let signature = try key.signature(for: input)
        #expect(signature.count == 256)
        #expect(key.isValidSignature(signature, for: input))
        #expect(!key.isValidSignature([0] + signature, for: input))
        #expect(!key.isValidSignature(signature + [0], for: input))
        #expect(!key.isValidSignature(Array(signature.dropFirst()), for: input))
    }

    static var noExpiry: ValidationPolicy {
        var policy = ValidationPolicy()
        policy.requireExpiration = false
        return policy
    }

    @Test func aTokenWithoutKidNeverSelectsAKeyThatHasOne() throws {
        let named = try JWSKey.generate(.es256, keyID: "named")
        let token = try JWSSigner(key: JWSKey.generate(.es256)).sign(claims: [:])
        // Signed by a kid-less key whose public half is published with a kid: refused without trying it.
        let unnamedTwin = try JWSKey.generate(.es256)
        let twinToken = try JWSSigner(key: unnamedTwin).sign(claims: [:])
        let republished = try JWSKey.pem(try unnamedTwin.publicKeyPEM(), keyID: "twin")
        for (set, token) in [([named.publicKey()], token), ([republished], twinToken)] {
            #expect(throws: JWTValidationError(.missingKid, "")) {
                try JWTVerifier(keys: JWKSet(keys: set)).verify(token, policy: Self.noExpiry, now: 0)
            }
        }
        // A kid-less key in the set is the one a kid-less token gets, even next to a kid'd key of its algorithm.
        let set = try JWKSet(keys: [named.publicKey(), unnamedTwin.publicKey()])
        let verified = try JWTVerifier(keys: set).verify(twinToken, policy: Self.noExpiry, now: 0)
        #expect(verified.keyID == nil)
    }

    @Test func jsonMemberNamesAreComparedByCodePoint() throws {
        // U+212A KELVIN SIGN is canonically equivalent to "K", "e\u0301" to "é": distinct names all the same.
        let parsed = try JSON.parse(Array(#"{"K":1,"\u212A":2,"\u00E9":3,"e\u0301":4}"#.utf8))
        let object = try #require(parsed.objectValue)
        #expect(object.count == 4)
        #expect(object["K"] == .integer(1))
        #expect(object["\u{212A}"] == .integer(2))
        #expect(object["\u{E9}"] == .integer(3))
        #expect(object["e\u{301}"] == .integer(4))
        // The same code points, once escaped, are still a duplicate.
        #expect(throws: JSONError.self) { try JSON.parse(Array(#"{"a":1,"\u0061":2}"#.utf8)) }
    }

    @Test func aClaimIsFoundOnlyUnderItsExactName() throws {
        let key = try JWSKey.generate(.es256)
        let token = try JWSSigner(key: key).sign(claims: ["\u{212A}": .integer(1)])
        let verified = try JWTVerifier(keys: JWKSet(keys: [key.publicKey()])).verify(token, policy: Self.noExpiry, now: 0)
        #expect(verified.claims["K"] == nil)
        #expect(verified.claims["\u{212A}"] == .integer(1))
    }

    @Test func theHeaderAlgIsEscapedAndTruncatedInTheError() throws {
        let key = try JWSKey.generate(.es256)
        let alg = "RS256\n2026-01-01 INFO forged log line " + String(repeating: "A", count: 10_000)
        let header = JSON.serialize(.object(["alg": .string(alg)]))
        let token = try JWSSigner(key: key).sign(headerJSON: header, payload: Array("{}".utf8))
        let error = try #require(throws: JWTValidationError.self) {
            try JWTVerifier(keys: JWKSet(keys: [key.publicKey()])).verify(token, policy: ValidationPolicy(), now: 0)
        }
        #expect(error.reason == .algNotAllowed)
        #expect(!error.message.contains("\n"))
        #expect(error.message.contains(#""RS256\u000A2026-01-01 INFO forged log…""#))
        #expect(error.message.utf8.count < 100)
    }

    @Test func aDuplicateMemberNameIsEscapedInTheJSONError() throws {
        let error = try #require(throws: JSONError.self) { try JSON.parse(Array(#"{"a\n\u001b":1,"a\n\u001b":2}"#.utf8)) }
        #expect(!error.message.contains("\n"))
        #expect(error.message.contains(#""a\u000A\u001B""#))
    }

    @Test func decodeUnverifiedIgnoresTokensOver16KiB() throws {
        let key = try JWSKey.generate(.es256)
        let small = try JWSSigner(key: key).sign(claims: ["pad": .string(String(repeating: "x", count: 100))])
        #expect(JWTVerifier.decodeUnverified(small).claims != nil)
        let large = try JWSSigner(key: key).sign(claims: ["pad": .string(String(repeating: "x", count: 13_000))])
        #expect(large.utf8.count > 16 * 1024)
        let decoded = JWTVerifier.decodeUnverified(large)
        #expect(decoded.header == nil && decoded.claims == nil)
    }

    @Test(arguments: ["kid", "typ"])
    func aSignerRefusesANonStringKidOrTyp(name: String) throws {
        let signer = try JWSSigner(key: JWSKey.generate(.es256))
        #expect(throws: JWSKeyError(.malformedKey, "")) { try signer.sign(claims: [:], extraHeader: [name: .integer(7)]) }
        #expect(throws: JWSKeyError(.malformedKey, "")) { try signer.sign(claims: [:], extraHeader: [name: .bool(true)]) }
        _ = try signer.sign(claims: [:], extraHeader: [name: "x"])
    }
}
