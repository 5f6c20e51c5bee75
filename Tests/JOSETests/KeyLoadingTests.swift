import JOSE
import OpenSSLPrimitives
import Testing

@Suite struct KeyLoadingTests {
    // A syntactically valid 1024-bit public modulus: OpenSSL imports public RSA parameters without factoring them.
    static let weakRSAJWK: String = {
        let modulus = [0xC3] + [UInt8](repeating: 0x5A, count: 126) + [0x01]
        return #"{"kty":"RSA","n":"\#(Base64URL.encode(modulus))","e":"AQAB"}"#
    }()

    static func jwkText(_ key: JWSKey) throws -> String {
        String(decoding: try key.publicJWK(), as: UTF8.self)
    }

    @Test func rsaUnder2048BitsIsWeak() throws {
        #expect(throws: JWSKeyError(.weakKey, "")) { try JWSKey.jwk(Array(Self.weakRSAJWK.utf8)) }
        #expect(throws: JWSKeyError(.weakKey, "")) { try JWKSet(json: Array(#"{"keys":[\#(Self.weakRSAJWK)]}"#.utf8)) }
    }

    @Test(arguments: [(JWSAlgorithm.hs256, 31), (.hs384, 47), (.hs512, 63)])
    func shortHMACSecretsAreWeak(algorithm: JWSAlgorithm, length: Int) throws {
        #expect(throws: JWSKeyError(.weakKey, "")) {
            try JWSKey.hmac(secret: [UInt8](repeating: 7, count: length), algorithm: algorithm)
        }
        _ = try JWSKey.hmac(secret: [UInt8](repeating: 7, count: length + 1), algorithm: algorithm)
    }

    @Test func aPublicKeyCannotSign() throws {
        let publicKey = try JWSKey.generate(.es256).publicKey()
        #expect(throws: JWSKeyError(.notPrivate, "")) { try JWSSigner(key: publicKey) }
        #expect(throws: JWSKeyError(.notPrivate, "")) { try publicKey.signature(for: [1]) }
    }

    @Test(arguments: ["PUBLIC KEY", "PRIVATE KEY", "CERTIFICATE"])
    func garbagePEMIsMalformedWithOpenSSLDetails(label: String) throws {
        let pem = "-----BEGIN \(label)-----\nTm90IGEga2V5IGF0IGFsbCwganVzdCB0ZXh0\n-----END \(label)-----\n"
        let error = try #require(throws: JWSKeyError.self) { try JWSKey.pem(pem) }
        #expect(error.reason == .malformedKey)
        let details = try #require(error.openSSLError?.details)
        #expect(!details.isEmpty)
    }

    @Test func textWithoutPEMIsMalformed() throws {
        #expect(throws: JWSKeyError(.malformedKey, "")) { try JWSKey.pem("hello") }
        #expect(throws: JWSKeyError(.unsupportedKey, "")) {
            try JWSKey.pem("-----BEGIN DSA PRIVATE KEY-----\nAAAA\n-----END DSA PRIVATE KEY-----")
        }
    }

    @Test func duplicateKeyIDsAreRefused() throws {
        let a = try Self.jwkText(JWSKey.generate(.es256, keyID: "same"))
        let b = try Self.jwkText(JWSKey.generate(.edDSA, keyID: "same"))
        #expect(throws: JWSKeyError(.duplicateKeyID, "")) { try JWKSet(json: Array(#"{"keys":[\#(a),\#(b)]}"#.utf8)) }
    }

    @Test func symmetricMixedWithAsymmetricIsRefused() throws {
        let oct = #"{"kty":"oct","alg":"HS256","kid":"h","k":"\#(Base64URL.encode([UInt8](repeating: 1, count: 32)))"}"#
        let rsa = try Self.jwkText(JWSKey.jwk(Array(RFCVectors.rs256Key.utf8)).publicKey())
        #expect(throws: JWSKeyError(.mixedKeyTypes, "")) { try JWKSet(json: Array(#"{"keys":[\#(oct),\#(rsa)]}"#.utf8)) }
        #expect(throws: JWSKeyError(.mixedKeyTypes, "")) {
            try JWKSet(keys: [JWSKey.generate(.hs256), JWSKey.generate(.es256)])
        }
    }

    @Test func encryptionKeysAreRefused() throws {
        let jwk =
            #"{"kty":"EC","use":"enc","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#
        #expect(throws: JWSKeyError(.encryptionKey, "")) { try JWKSet(json: Array(#"{"keys":[\#(jwk)]}"#.utf8)) }
        #expect(throws: JWSKeyError(.encryptionKey, "")) { try JWSKey.jwk(Array(jwk.utf8)) }
    }

    @Test func anECPointOffTheCurveIsRefused() throws {
        // RFC 7515 A.3's point with the last byte of y changed.
        let jwk = #"{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a8"}"#
        #expect(throws: JWSKeyError(.invalidECPoint, "")) { try JWKSet(json: Array(#"{"keys":[\#(jwk)]}"#.utf8)) }
    }

    @Test func aP256KeyCannotBeUsedForES384() throws {
        #expect(throws: JWSKeyError(.algorithmMismatch, "")) {
            try JWSKey.jwk(Array(RFCVectors.es256Key.utf8), algorithm: .es384)
        }
        let pem = try JWSKey.generate(.es256).privateKeyPEM()
        #expect(throws: JWSKeyError(.algorithmMismatch, "")) { try JWSKey.pem(pem, algorithm: .es384) }
        #expect(throws: JWSKeyError(.algorithmMismatch, "")) { try JWSKey.pem(pem, algorithm: .rs256) }
        #expect(throws: JWSKeyError(.algorithmMismatch, "")) {
            try JWSKey.jwk(Array(RFCVectors.rs256Key.utf8), algorithm: .es256)
        }
    }

    @Test func theJWKAlgMemberWinsAndBindsTheKey() throws {
        let rfcKey = try #require(try JSON.parse(Array(RFCVectors.rs256Key.utf8)).objectValue)
        var jwk: JSONObject = ["kty": "RSA", "alg": "PS384"]
        jwk["n"] = rfcKey["n"]
        jwk["e"] = rfcKey["e"]
        #expect(try JWSKey.jwk(JSON.serialize(.object(jwk)), algorithm: .rs256).algorithm == .ps384)
        jwk["alg"] = "RSA-OAEP"
        #expect(throws: JWSKeyError(.unsupportedKey, "")) { try JWSKey.jwk(JSON.serialize(.object(jwk))) }
    }

    @Test func aPrivateJWKWhoseHalvesDoNotMatchIsRefused() throws {
        var ed = try #require(try JSON.parse(Array(RFCVectors.ed25519Key.utf8)).objectValue)
        ed["d"] = .string(Base64URL.encode([UInt8](repeating: 1, count: 32)))
        #expect(throws: JWSKeyError(.malformedKey, "")) { try JWSKey.jwk(JSON.serialize(.object(ed))) }
        var ec = try #require(try JSON.parse(Array(RFCVectors.es256Key.utf8)).objectValue)
        ec["d"] = .string(Base64URL.encode([UInt8](repeating: 1, count: 32)))
        #expect(throws: JWSKeyError(.malformedKey, "")) { try JWSKey.jwk(JSON.serialize(.object(ec))) }
    }

    @Test func octKeysNeedAnAlgorithm() throws {
        let oct = #"{"kty":"oct","k":"\#(Base64URL.encode([UInt8](repeating: 1, count: 64)))"}"#
        #expect(throws: JWSKeyError(.malformedKey, "")) { try JWSKey.jwk(Array(oct.utf8)) }
        #expect(try JWSKey.jwk(Array(oct.utf8), algorithm: .hs512).algorithm == .hs512)
    }

    @Test(arguments: [
        #"{"kty":"EC","crv":"secp256k1","x":"AA","y":"AA"}"#, #"{"kty":"OKP","crv":"X25519","x":"AA"}"#,
        #"{"kty":"DSA"}"#,
    ])
    func unsupportedKeyTypes(jwk: String) throws {
        #expect(throws: JWSKeyError(.unsupportedKey, "")) { try JWSKey.jwk(Array(jwk.utf8)) }
    }

    @Test(arguments: [
        "not json", "[]", #"{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVE","y":"AA"}"#,
        #"{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo="}"#, #"{"kty":7}"#,
    ])
    func malformedJWKs(jwk: String) throws {
        #expect(throws: JWSKeyError(.malformedKey, "")) { try JWSKey.jwk(Array(jwk.utf8)) }
    }

    @Test func serviceAccountJSONRoundTrips() throws {
        let account = try ServiceAccountKey.generate(projectID: "fleet-demo", clientEmail: "svc@fleet-demo.iam.gserviceaccount.com")
        #expect(account.privateKeyID.count == 40)
        #expect(account.privateKeyID.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(account.key.keyID == account.privateKeyID)
        #expect(account.key.algorithm == .rs256)
        let reloaded = try ServiceAccountKey(json: account.json())
        #expect(reloaded.projectID == "fleet-demo")
        #expect(reloaded.clientEmail == account.clientEmail)
        #expect(reloaded.privateKeyID == account.privateKeyID)
        #expect(try reloaded.key.publicJWK() == account.key.publicJWK())
        let token = try JWSSigner(key: reloaded.key).sign(claims: ["exp": 2_000_000_000])
        let verified = try JWTVerifier(keys: JWKSet(keys: [account.key.publicKey()]))
            .verify(token, policy: ValidationPolicy(), now: 1_900_000_000)
        #expect(verified.keyID == account.privateKeyID)
        #expect(try KeyFile.load(bytes: account.json()).first?.keyID == account.privateKeyID)
    }

    @Test func serviceAccountJSONMustBeAServiceAccount() throws {
        #expect(throws: JWSKeyError(.malformedKey, "")) {
            try ServiceAccountKey(json: Array(#"{"type":"authorized_user","client_email":"a"}"#.utf8))
        }
    }

    @Test func keyFileDetectsTheFormat() throws {
        let ec = try JWSKey.generate(.es256, keyID: "e")
        #expect(try KeyFile.load(bytes: Array(ec.privateKeyPEM().utf8), keyID: "p").first?.keyID == "p")
        #expect(try KeyFile.load(bytes: ec.publicJWK()).first?.isPrivate == false)
        let set = try JWKSet(keys: [ec.publicKey(), JWSKey.generate(.edDSA, keyID: "d").publicKey()])
        #expect(try KeyFile.load(bytes: set.publicJSON()).count == 2)
        #expect(throws: JWSKeyError(.malformedKey, "")) { try KeyFile.load(contentsOf: "/nonexistent/key.pem") }
    }
}
