import JOSE
import Testing

@Suite struct RoundTripTests {
    static let now: Int64 = 1_750_000_000

    static func claims() -> JSONObject {
        [
            "iss": "svc@example.iam.gserviceaccount.com", "aud": "https://fleetengine.googleapis.com/",
            "iat": .integer(now), "exp": .integer(now + 3600), "authorization": .object(["tripid": "trip-1"]),
        ]
    }

    @Test(arguments: JWSAlgorithm.allCases)
    func generateSignVerify(algorithm: JWSAlgorithm) throws {
        let key = try JWSKey.generate(algorithm, keyID: "k1")
        #expect(key.algorithm == algorithm)
        #expect(key.isPrivate)
        #expect(key.isSymmetric == algorithm.isSymmetric)
        let token = try JWSSigner(key: key).sign(claims: Self.claims())
        let verifier = try JWTVerifier(keys: JWKSet(keys: [key.publicKey()]))
        let verified = try verifier.verify(token, policy: ValidationPolicy(), now: Self.now)
        #expect(verified.algorithm == algorithm)
        #expect(verified.keyID == "k1")
        #expect(verified.header["typ"] == "JWT")
        #expect(verified.claims == Self.claims())
        #expect(verified.expiresAt == Self.now + 3600)
        #expect(verified.issuedAt == Self.now)
    }

    @Test(arguments: JWSAlgorithm.allCases)
    func everyTamperedByteIsABadSignature(algorithm: JWSAlgorithm) throws {
        let key = try JWSKey.generate(algorithm)
        let signingInput = Array("header.payload".utf8)
        let signature = try key.signature(for: signingInput)
        #expect(key.publicKey().isValidSignature(signature, for: signingInput))
        for index in [0, signature.count / 2, signature.count - 1] {
            var tampered = signature
            tampered[index] ^= 0x01
            #expect(!key.isValidSignature(tampered, for: signingInput))
        }
        #expect(!key.isValidSignature(signature, for: Array("header.payloaD".utf8)))
        #expect(!key.isValidSignature([], for: signingInput))
    }

    @Test(arguments: JWSAlgorithm.allCases)
    func aTamperedTokenIsRejectedAsBadSignature(algorithm: JWSAlgorithm) throws {
        let key = try JWSKey.generate(algorithm)
        let token = try JWSSigner(key: key).sign(claims: Self.claims())
        var parts = token.split(separator: ".").map(String.init)
        var signature = try #require(Base64URL.decode(parts[2]))
        signature[0] ^= 0x80
        parts[2] = Base64URL.encode(signature)
        let verifier = try JWTVerifier(keys: JWKSet(keys: [key]))
        #expect(throws: JWTValidationError(.badSignature, "")) {
            try verifier.verify(parts.joined(separator: "."), policy: ValidationPolicy(), now: Self.now)
        }
    }

    @Test(arguments: [(JWSAlgorithm.es256, 64), (.es384, 96), (.es512, 132), (.edDSA, 64), (.hs384, 48)])
    func signatureLengthsAreTheJWSOnes(algorithm: JWSAlgorithm, length: Int) throws {
        let key = try JWSKey.generate(algorithm)
        #expect(try key.signature(for: [1, 2, 3]).count == length)
    }

    @Test(arguments: JWSAlgorithm.allCases.filter { !$0.isSymmetric })
    func pemRoundTripKeepsTheKey(algorithm: JWSAlgorithm) throws {
        let key = try JWSKey.generate(algorithm)
        let privatePEM = try key.privateKeyPEM()
        let publicPEM = try key.publicKeyPEM()
        #expect(publicPEM.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        let reloaded = try JWSKey.pem(privatePEM, algorithm: algorithm, keyID: "pem")
        let publicKey = try JWSKey.pem(publicPEM, algorithm: algorithm)
        #expect(reloaded.isPrivate)
        #expect(!publicKey.isPrivate)
        #expect(reloaded.keyID == "pem")
        #expect(try reloaded.publicJWK() != key.publicJWK())  // kid differs
        #expect(try publicKey.publicKeyPEM() == publicPEM)
        let signature = try reloaded.signature(for: [42])
        #expect(publicKey.isValidSignature(signature, for: [42]))
        #expect(throws: JWSKeyError(.notPrivate, "")) { try publicKey.privateKeyPEM() }
    }

    @Test func summariesNameTheKeyWithoutMaterial() throws {
        #expect(try JWSKey.generate(.rs256).summary == "RSA 2048")
        #expect(try JWSKey.generate(.es384).summary == "EC P-384")
        #expect(try JWSKey.generate(.edDSA).summary == "Ed25519")
        #expect(try JWSKey.generate(.hs256).summary == "HMAC 256-bit")
    }

    @Test func hmacKeysAreTheirOwnPublicKeyAndHaveNoJWK() throws {
        let key = try JWSKey.generate(.hs512)
        #expect(key.publicKey() === key)
        #expect(throws: JWSKeyError.self) { try key.publicJWK() }
        #expect(throws: JWSKeyError.self) { try key.publicKeyPEM() }
        #expect(try JWKSet(keys: [key]).publicJSON() == Array(#"{"keys":[]}"#.utf8))
    }

    @Test func keyIDSelectsAmongSeveralKeys() throws {
        let first = try JWSKey.generate(.es256, keyID: "a")
        let second = try JWSKey.generate(.es256, keyID: "b")
        let set = try JWKSet(keys: [first.publicKey(), second.publicKey()])
        let token = try JWSSigner(key: second).sign(claims: Self.claims())
        #expect(try JWTVerifier(keys: set).verify(token, policy: ValidationPolicy(), now: Self.now).keyID == "b")
        let reloaded = try JWKSet(json: set.publicJSON())
        #expect(reloaded.keys.map(\.keyID) == ["a", "b"])
        #expect(reloaded.key(withID: "b")?.isPrivate == false)
    }

    @Test func decodeUnverifiedShowsHeaderAndClaims() throws {
        let token = try JWSSigner(key: JWSKey.generate(.es256, keyID: "x")).sign(claims: Self.claims())
        let decoded = JWTVerifier.decodeUnverified(token)
        #expect(decoded.header?["kid"] == "x")
        #expect(decoded.claims == Self.claims())
        #expect(JWTVerifier.decodeUnverified("not a token").header == nil)
    }

    @Test func decodeUnverifiedHeaderReadsTheFirstSegmentAlone() throws {
        let token = try JWSSigner(key: JWSKey.generate(.es256, keyID: "x")).sign(claims: Self.claims())
        #expect(JWTVerifier.decodeUnverifiedHeader(token) == JWTVerifier.decodeUnverified(token).header)
        // The rest is not decoded: a broken payload still leaves the header readable.
        let header = token.prefix { $0 != "." }
        #expect(JWTVerifier.decodeUnverifiedHeader(header + ".!!.!!")?["kid"] == "x")
        #expect(JWTVerifier.decodeUnverifiedHeader(String(header)) == nil)
        #expect(JWTVerifier.decodeUnverifiedHeader("bm90IGpzb24.e30.") == nil)
        #expect(JWTVerifier.decodeUnverifiedHeader("") == nil)
    }
}
