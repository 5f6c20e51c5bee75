import JOSE
import Testing

/// What `JWKSet(json:)` accepts besides `{"keys":[…]}`: a single JWK, read as a set of one. Anything else keeps
/// its clear refusal.
@Suite(.bug(id: 8, "a single JWK given where a JWKS is expected was refused"))
struct JWKSetInputTests {
    static func publicJWK(_ algorithm: JWSAlgorithm, keyID: String? = "one", dropping members: [String] = [])
        throws -> JSONObject
    {
        var jwk = try #require(try JSON.parse(try JWSKey.generate(algorithm, keyID: keyID).publicJWK()).objectValue)
        for member in members { jwk[member] = nil }
        return jwk
    }

    @Test(arguments: [JWSAlgorithm.rs256, .es256, .edDSA])
    func aSingleJWKIsASetOfThatKey(_ algorithm: JWSAlgorithm) throws {
        let jwk = try Self.publicJWK(algorithm)
        let set = try JWKSet(json: JSON.serialize(.object(jwk)))
        #expect(set.keys.count == 1)
        let key = try #require(set.key(withID: "one"))
        #expect(key.algorithm == algorithm)
        #expect(!key.isPrivate)
        // The same key as the one-member JWKS gives.
        let wrapped = try JWKSet(json: JSON.serialize(.object(["keys": .array([.object(jwk)])])))
        #expect(try wrapped.keys[0].publicJWK() == key.publicJWK())
    }

    @Test func aSingleJWKKeepsEveryCheckOfAJWKSMember() throws {
        let oct: JSONObject = ["kty": "oct", "k": .string(Base64URL.encode([UInt8](repeating: 1, count: 32)))]
        #expect(throws: JWSKeyError(.malformedKey, "")) { try JWKSet(json: JSON.serialize(.object(oct))) }
        #expect(throws: JWSKeyError(.weakKey, "")) { try JWKSet(json: Array(KeyLoadingTests.weakRSAJWK.utf8)) }
        var encryption = try Self.publicJWK(.rs256)
        encryption["use"] = "enc"
        #expect(throws: JWSKeyError(.encryptionKey, "")) { try JWKSet(json: JSON.serialize(.object(encryption))) }
        var empty = try Self.publicJWK(.es256)
        empty["kid"] = ""
        #expect(throws: JWSKeyError(.malformedKey, "")) { try JWKSet(json: JSON.serialize(.object(empty))) }
    }

    @Test(arguments: [
        "{}", "[]", #"{"kid":"one"}"#, #"{"keys":{}}"#, #"{"keys":"none"}"#, #"{"keys":null,"kty":"EC"}"#, "42",
    ])
    func anythingElseIsStillRefusedWithTheJWKSMessage(_ json: String) throws {
        let error = try #require(throws: JWSKeyError.self) { try JWKSet(json: Array(json.utf8)) }
        #expect(error.reason == .malformedKey)
        #expect(error.message == #"A JWKS must be a JSON object with a "keys" array."#)
    }

    @Test func aJWKSWithKeysIsReadAsASetEvenBesideAKty() throws {
        let member = try Self.publicJWK(.es256, keyID: "member")
        let set = try JWKSet(json: JSON.serialize(.object(["kty": "EC", "keys": .array([.object(member)])])))
        #expect(set.keys.map(\.keyID) == ["member"])
    }

    @Test func anAlgorithmBindsOnlyKeysWithoutTheirOwnAlg() throws {
        let bare = try Self.publicJWK(.rs256, keyID: "bare", dropping: ["alg"])
        let named = try Self.publicJWK(.rs256, keyID: "named")
        #expect(try JWKSet(json: JSON.serialize(.object(bare))).keys[0].algorithm == .rs256)
        #expect(try JWKSet(json: JSON.serialize(.object(bare)), algorithm: .ps384).keys[0].algorithm == .ps384)
        let set = try JWKSet(
            json: JSON.serialize(.object(["keys": .array([.object(bare), .object(named)])])), algorithm: .ps384)
        #expect(set.key(withID: "bare")?.algorithm == .ps384)
        #expect(set.key(withID: "named")?.algorithm == .rs256, "a JWK's own alg wins")
        #expect(throws: JWSKeyError(.algorithmMismatch, "")) {
            try JWKSet(json: JSON.serialize(.object(bare)), algorithm: .es256)
        }
    }
}
