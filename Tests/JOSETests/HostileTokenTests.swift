import JOSE
import Testing

/// Keys and a token builder for hostile-token cases.
struct HostileFixture {
    static let now: Int64 = 1_750_000_000
    let ecKey: JWSKey
    let verifier: JWTVerifier

    init() throws {
        ecKey = try JWSKey.generate(.es256, keyID: "ec")
        verifier = try JWTVerifier(keys: JWKSet(keys: [ecKey.publicKey()]))
    }

    static func claims(_ changes: JSONObject = JSONObject()) -> JSONObject {
        var claims: JSONObject = [
            "iss": "issuer", "aud": "audience", "iat": .integer(now), "exp": .integer(now + 600),
        ]
        for (name, value) in changes { claims[name] = value }
        return claims
    }

    /// A correctly signed token over exactly these header and payload texts.
    func token(header: String = #"{"alg":"ES256","kid":"ec"}"#, payload: String) throws -> String {
        try JWSSigner(key: ecKey).sign(headerJSON: Array(header.utf8), payload: Array(payload.utf8))
    }

    func token(claims: JSONObject = HostileFixture.claims(), extraHeader: JSONObject = JSONObject()) throws -> String {
        try JWSSigner(key: ecKey).sign(claims: claims, extraHeader: extraHeader)
    }

    static func replacingSegment(_ index: Int, of token: String, with text: String) -> String {
        var parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[index] = text
        return parts.joined(separator: ".")
    }

    static var policy: ValidationPolicy {
        var policy = ValidationPolicy()
        policy.issuer = "issuer"
        policy.audiences = ["other", "audience"]
        policy.maxLifetime = 3600
        return policy
    }
}

struct HostileToken: Sendable, CustomTestStringConvertible {
    let name: String
    let reason: JWTValidationError.Reason
    let make: @Sendable (HostileFixture) throws -> String
    var policy: @Sendable (inout ValidationPolicy) -> Void = { _ in }
    var testDescription: String { name }
}

@Suite struct HostileTokenTests {
    static let cases: [HostileToken] = [
        HostileToken(name: "alg none", reason: .algNotAllowed) { fixture in
            let unsigned = try fixture.token(header: #"{"alg":"none"}"#, payload: #"{"exp":1750000600}"#)
            return HostileFixture.replacingSegment(2, of: unsigned, with: "")
        },
        HostileToken(name: "alg outside the allow-list", reason: .algNotAllowed, make: { try $0.token() }) {
            $0.allowedAlgorithms = [.rs256]
        },
        HostileToken(name: "padded base64url", reason: .malformed) { fixture in
            let token = try fixture.token()
            let signature = token.split(separator: ".")[2]  // 86 characters: 2 padding characters would follow
            return HostileFixture.replacingSegment(2, of: token, with: signature + "==")
        },
        HostileToken(name: "non-zero trailing bits", reason: .malformed) { fixture in
            let token = try fixture.token()
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
            var signature = Array(token.split(separator: ".")[2])
            let last = try #require(alphabet.firstIndex(of: signature[signature.count - 1]))
            signature[signature.count - 1] = alphabet[last | 1]
            return HostileFixture.replacingSegment(2, of: token, with: String(signature))
        },
        HostileToken(name: "duplicate header member", reason: .malformed) { fixture in
            try fixture.token(header: #"{"alg":"ES256","kid":"ec","alg":"ES256"}"#, payload: #"{"exp":1750000600}"#)
        },
        HostileToken(name: "duplicate claim", reason: .malformed) { fixture in
            try fixture.token(payload: #"{"exp":1750000600,"sub":"a","sub":"b"}"#)
        },
        HostileToken(name: "DER-encoded ES256 signature", reason: .badSignature) { fixture in
            let token = try fixture.token()
            let raw = try #require(Base64URL.decode(token.split(separator: ".")[2]))
            return HostileFixture.replacingSegment(2, of: token, with: Base64URL.encode(DER.ecdsaSignature(raw)))
        },
        HostileToken(name: "r = s = 0", reason: .badSignature) { fixture in
            HostileFixture.replacingSegment(2, of: try fixture.token(), with: Base64URL.encode([UInt8](repeating: 0, count: 64)))
        },
        HostileToken(name: "signature of 63 bytes", reason: .badSignature) { fixture in
            let token = try fixture.token()
            let raw = try #require(Base64URL.decode(token.split(separator: ".")[2]))
            return HostileFixture.replacingSegment(2, of: token, with: Base64URL.encode(raw.dropLast()))
        },
        HostileToken(name: "oversized token", reason: .tokenTooLarge) { fixture in
            try fixture.token(claims: HostileFixture.claims(["pad": .string(String(repeating: "x", count: 16 * 1024))]))
        },
        HostileToken(name: "oversized garbage is refused before decoding", reason: .tokenTooLarge) { _ in
            String(repeating: "!", count: 16 * 1024 + 1)
        },
        HostileToken(name: "four segments", reason: .malformed) { try $0.token() + ".AAAA" },
        HostileToken(name: "five segments (JWE)", reason: .jweNotSupported) { try $0.token() + ".AAAA.AAAA" },
        HostileToken(name: "two segments", reason: .malformed) { fixture in
            String(try fixture.token().split(separator: ".").prefix(2).joined(separator: "."))
        },
        HostileToken(name: "unknown kid", reason: .unknownKid) { fixture in
            try fixture.token(extraHeader: ["kid": "someone-else"])
        },
        HostileToken(name: "numeric kid", reason: .malformed) { fixture in
            try fixture.token(header: #"{"alg":"ES256","kid":7}"#, payload: #"{"exp":1750000600}"#)
        },
        HostileToken(name: "header is an array", reason: .malformed) { fixture in
            try fixture.token(header: #"["ES256"]"#, payload: #"{"exp":1750000600}"#)
        },
        HostileToken(name: "crit present", reason: .unsupportedCrit) { fixture in
            try fixture.token(header: #"{"alg":"ES256","kid":"ec","crit":["exp"]}"#, payload: #"{"exp":1750000600}"#)
        },
        HostileToken(name: "expired", reason: .expired) { fixture in
            try fixture.token(claims: HostileFixture.claims(["exp": .integer(HostileFixture.now - 61)]))
        },
        HostileToken(name: "no exp", reason: .missingClaim) { fixture in
            try fixture.token(payload: #"{"iss":"issuer","aud":"audience","iat":1750000000}"#)
        },
        HostileToken(name: "exp as a string", reason: .malformed) { fixture in
            try fixture.token(claims: HostileFixture.claims(["exp": "1750000600"]))
        },
        HostileToken(name: "nbf ahead", reason: .notYetValid) { fixture in
            try fixture.token(claims: HostileFixture.claims(["nbf": .integer(HostileFixture.now + 61)]))
        },
        HostileToken(name: "iat in the future", reason: .issuedInFuture) { fixture in
            try fixture.token(claims: HostileFixture.claims(["iat": .integer(HostileFixture.now + 120)]))
        },
        HostileToken(name: "wrong aud", reason: .wrongAudience) { fixture in
            try fixture.token(claims: HostileFixture.claims(["aud": ["x", "y"]]))
        },
        HostileToken(name: "wrong iss", reason: .wrongIssuer) { fixture in
            try fixture.token(claims: HostileFixture.claims(["iss": "mallory"]))
        },
        HostileToken(name: "lifetime too long", reason: .lifetimeTooLong) { fixture in
            try fixture.token(claims: HostileFixture.claims(["exp": .integer(HostileFixture.now + 3601)]))
        },
        HostileToken(name: "lifetime check without iat", reason: .missingClaim) { fixture in
            try fixture.token(payload: #"{"iss":"issuer","aud":"audience","exp":1750000600}"#)
        },
        HostileToken(name: "payload not JSON", reason: .malformed) { try $0.token(payload: "hello") },
        HostileToken(
            name: "missing kid when required", reason: .missingKid,
            make: { fixture in
                try fixture.token(header: #"{"alg":"ES256"}"#, payload: #"{"exp":1750000600}"#)
            }
        ) { $0.requireKeyID = true },
        HostileToken(name: "wrong typ", reason: .wrongType, make: { try $0.token(extraHeader: ["typ": "at+jwt"]) }) {
            $0.requiredType = "JWT"
        },
    ]

    @Test(arguments: cases)
    func isRejectedWithItsReason(hostile: HostileToken) throws {
        let fixture = try HostileFixture()
        let token = try hostile.make(fixture)
        var policy = HostileFixture.policy
        hostile.policy(&policy)
        #expect(throws: JWTValidationError(hostile.reason, "")) {
            try fixture.verifier.verify(token, policy: policy, now: HostileFixture.now)
        }
    }

    @Test func theUntamperedFixtureTokenIsAccepted() throws {
        let fixture = try HostileFixture()
        var policy = HostileFixture.policy
        policy.requiredType = "jwt"
        policy.requireKeyID = true
        let verified = try fixture.verifier.verify(try fixture.token(), policy: policy, now: HostileFixture.now)
        #expect(verified.claims["aud"] == "audience")
    }

    @Test(arguments: [-59, 0, 59] as [Int64])
    func leewayCoversSmallSkew(skew: Int64) throws {
        let fixture = try HostileFixture()
        let claims = HostileFixture.claims([
            "exp": .integer(HostileFixture.now - skew), "nbf": .integer(HostileFixture.now + skew),
            "iat": .integer(HostileFixture.now - 600),
        ])
        var policy = HostileFixture.policy
        policy.maxLifetime = nil
        _ = try fixture.verifier.verify(try fixture.token(claims: claims), policy: policy, now: HostileFixture.now)
    }

    @Test func hs256SignedWithTheRSAPublicKeyPEMIsAKeyAlgorithmMismatch() throws {
        let rsa = try JWSKey.generate(.rs256, keyID: "rsa").publicKey()
        let publicPEM = try rsa.publicKeyPEM()
        let forger = try JWSKey.hmac(secret: Array(publicPEM.utf8), algorithm: .hs256)
        let claims = HostileFixture.claims()
        let withKid = try JWSSigner(key: forger).sign(claims: claims, extraHeader: ["kid": "rsa"])
        let withoutKid = try JWSSigner(key: forger).sign(claims: claims)
        let verifier = try JWTVerifier(keys: JWKSet(keys: [rsa]))
        for token in [withKid, withoutKid] {
            #expect(throws: JWTValidationError(.keyAlgMismatch, "")) {
                try verifier.verify(token, policy: ValidationPolicy(), now: HostileFixture.now)
            }
        }
        // Loading the PEM as an HMAC key is refused outright.
        #expect(throws: JWSKeyError(.algorithmMismatch, "")) { try JWSKey.pem(publicPEM, algorithm: .hs256) }
    }

    @Test func signatureOnlyAcceptsAnyPayloadButStillChecksTheSignature() throws {
        let fixture = try HostileFixture()
        var policy = ValidationPolicy()
        policy.signatureOnly = true
        let token = try fixture.token(payload: "not json at all")
        let verified = try fixture.verifier.verify(token, policy: policy, now: 0)
        #expect(verified.payload == Array("not json at all".utf8))
        #expect(verified.claims.count == 0)
    }
}

/// Minimal DER for the hostile DER-signature case.
enum DER {
    static func ecdsaSignature(_ raw: [UInt8]) -> [UInt8] {
        let half = raw.count / 2
        let body = integer(Array(raw[..<half])) + integer(Array(raw[half...]))
        return [0x30, UInt8(body.count)] + body
    }

    private static func integer(_ bytes: [UInt8]) -> [UInt8] {
        var value = Array(bytes.drop { $0 == 0 })
        if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
        return [0x02, UInt8(value.count)] + value
    }
}
