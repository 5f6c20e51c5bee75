import JOSE
import Testing

/// NumericDate claims with a fraction (RFC 7519 section 2) are accepted, and a fraction never extends validity.
@Suite(.bug(id: 8, "a fractional exp was rejected as malformed"))
struct NumericDateTests {
    static let now: Int64 = 1_750_000_000
    static let key: JWSKey = {
        do { return try JWSKey.generate(.es256, keyID: "nd") } catch { preconditionFailure("ES256 key: \(error)") }
    }()

    /// A token over exactly `claims` (JSON text, so the numbers reach the verifier as written).
    static func verify(_ claims: String, maxLifetime: Int64? = nil, at now: Int64 = now) throws -> VerifiedJWT {
        let token = try JWSSigner(key: key).sign(headerJSON: Array(#"{"alg":"ES256","kid":"nd"}"#.utf8), payload: Array(claims.utf8))
        var policy = ValidationPolicy()
        policy.leeway = 0
        policy.maxLifetime = maxLifetime
        return try JWTVerifier(keys: JWKSet(keys: [key.publicKey()])).verify(token, policy: policy, now: now)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let claims: String
        var maxLifetime: Int64? = nil
        /// nil: valid at `now` with no leeway.
        let reason: JWTValidationError.Reason?
        var testDescription: String { "\(claims) → \(reason?.rawValue ?? "valid")" }
    }

    // Each boundary is judged at `now` with no leeway; the fraction is always rounded against the token.
    static let cases: [Case] = [
        Case(claims: #"{"exp":1750000001.5}"#, reason: nil),
        Case(claims: #"{"exp":1750000000.5}"#, reason: .expired),  // exp acts as its floor, 1750000000
        Case(claims: #"{"exp":1750000000.999999}"#, reason: .expired),
        Case(claims: #"{"exp":1.7500000015e9}"#, reason: nil),  // an exponent is a number too
        Case(claims: #"{"exp":1750000060,"nbf":1749999999.5}"#, reason: nil),
        Case(claims: #"{"exp":1750000060,"nbf":1750000000.0}"#, reason: nil),
        Case(claims: #"{"exp":1750000060,"nbf":1750000000.25}"#, reason: .notYetValid),  // nbf acts as its ceiling
        Case(claims: #"{"exp":1750000060,"iat":1749999999.9}"#, reason: nil),
        Case(claims: #"{"exp":1750000060,"iat":1750000000.1}"#, reason: .issuedInFuture),
        // Lifetime = floor(exp) - floor(iat): 1750003599 - 1749999999 = 3600.
        Case(claims: #"{"iat":1749999999.5,"exp":1750003599.5}"#, maxLifetime: 3600, reason: nil),
        Case(claims: #"{"iat":1749999999.5,"exp":1750003600.5}"#, maxLifetime: 3600, reason: .lifetimeTooLong),
        // What a library writing `iat = time.time(); exp = iat + 3600` produces.
        Case(claims: #"{"iat":1749999999.123456,"exp":1750003599.123456}"#, maxLifetime: 3600, reason: nil),
        // Still refused, each clearly.
        Case(claims: #"{"exp":-1}"#, reason: .malformed),
        Case(claims: #"{"exp":-0.5}"#, reason: .malformed),
        Case(claims: #"{"exp":1750000060,"nbf":-1750000000.5}"#, reason: .malformed),
        Case(claims: #"{"exp":253402300800}"#, reason: .malformed),  // after 9999-12-31T23:59:59Z
        Case(claims: #"{"exp":253402300799.5}"#, reason: .malformed),
        Case(claims: #"{"exp":9223372036854775808}"#, reason: .malformed),  // past Int64: a Double
        Case(claims: #"{"exp":1e300}"#, reason: .malformed),
        Case(claims: #"{"exp":1e400}"#, reason: .malformed),  // not finite: the JSON parser refuses it
        Case(claims: #"{"exp":"1750000060"}"#, reason: .malformed),
        Case(claims: #"{"exp":1750000060,"iat":true}"#, reason: .malformed),
    ]

    @Test(arguments: cases)
    func fractionalDatesAreAcceptedAndRoundedAgainstTheToken(_ testCase: Case) throws {
        if let reason = testCase.reason {
            let error = #expect(throws: JWTValidationError.self) { try Self.verify(testCase.claims, maxLifetime: testCase.maxLifetime) }
            #expect(error?.reason == reason, "\(error.map(String.init(describing:)) ?? "no error")")
        } else {
            _ = try Self.verify(testCase.claims, maxLifetime: testCase.maxLifetime)
        }
    }

    @Test func refusalsNameTheClaimAndTheProblem() throws {
        let negative = #expect(throws: JWTValidationError.self) { try Self.verify(#"{"exp":1750000060,"nbf":-3.5}"#) }
        #expect(negative?.message == #"The "nbf" claim is negative."#)
        let late = #expect(throws: JWTValidationError.self) { try Self.verify(#"{"exp":1e300}"#) }
        #expect(late?.message == #"The "exp" claim is after 9999-12-31T23:59:59Z."#)
        let text = #expect(throws: JWTValidationError.self) { try Self.verify(#"{"exp":"soon"}"#) }
        #expect(text?.message.contains(#""exp" claim is not a number"#) == true)
    }

    @Test func numericDateKeepsBothWholeSecondsAroundAFraction() throws {
        let fractional = try NumericDate(.double(100.5), claim: "exp")
        #expect((fractional.floor, fractional.ceiling) == (100, 101))
        let whole = try NumericDate(.double(100), claim: "exp")
        #expect((whole.floor, whole.ceiling) == (100, 100))
        let integer = try NumericDate(.integer(NumericDate.maximum), claim: "exp")
        #expect((integer.floor, integer.ceiling) == (NumericDate.maximum, NumericDate.maximum))
        #expect(throws: JWTValidationError(.malformed, "")) { try NumericDate(.double(.nan), claim: "exp") }
        #expect(throws: JWTValidationError(.malformed, "")) { try NumericDate(.double(.infinity), claim: "exp") }
        #expect(throws: JWTValidationError(.malformed, "")) { try NumericDate(.null, claim: "exp") }
    }

    @Test func verifiedTimesAreWholeSecondsRoundedDown() throws {
        let verified = try Self.verify(#"{"iat":1749999990.75,"exp":1750003590.25}"#)
        #expect(verified.expiresAt == 1_750_003_590)
        #expect(verified.issuedAt == 1_749_999_990)
    }

    @Test func ourSignerWritesAFractionalExpThatVerifies() throws {
        let claims: JSONObject = ["sub": "s", "iat": .double(1_749_999_999.5), "exp": .double(1_750_000_600.25)]
        let token = try JWSSigner(key: Self.key).sign(claims: claims)
        let payload = try #require(Base64URL.decode(String(token.split(separator: ".")[1])))
        #expect(String(decoding: payload, as: UTF8.self).contains(#""exp":1750000600.25"#))
        var policy = ValidationPolicy()
        policy.maxLifetime = 3600
        let verified = try JWTVerifier(keys: JWKSet(keys: [Self.key.publicKey()])).verify(token, policy: policy, now: Self.now)
        #expect(verified.expiresAt == 1_750_000_600)
    }

    /// Python's `cryptography` signs an ES256 JWT whose iat and exp are floats, as `time.time()` gives them.
    static let pythonProgram = #"""
        import base64, json, sys
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, utils

        def b64e(raw):
            return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

        now = int(sys.argv[1])
        key = ec.generate_private_key(ec.SECP256R1())
        numbers = key.public_key().public_numbers()
        jwk = {"kty": "EC", "crv": "P-256", "alg": "ES256", "kid": "py-frac",
               "x": b64e(numbers.x.to_bytes(32, "big")), "y": b64e(numbers.y.to_bytes(32, "big"))}
        iat = now - 0.75
        claims = {"iss": "python@example.com", "iat": iat, "exp": iat + 3600.5}
        header = {"alg": "ES256", "typ": "JWT", "kid": "py-frac"}
        signing_input = (b64e(json.dumps(header).encode()) + "." + b64e(json.dumps(claims).encode())).encode()
        r, s = utils.decode_dss_signature(key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
        token = signing_input.decode() + "." + b64e(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
        print(json.dumps({"jwk": jwk, "token": token, "payload": json.dumps(claims)}))
        """#

    @Test(.timeLimit(.minutes(5)))
    func aPythonTokenWithAFractionalExpVerifiesUntilTheSecondBeforeIt() async throws {
        try await withTemporaryDirectory { directory in
            let result = try await Interop.python(Self.pythonProgram, [String(InteropJWT.now)], in: directory)
            try #require(result.succeeded, "\(result)")
            let output = try #require(try JSON.parse(Array(result.stdout.utf8)).objectValue)
            let jwk = try #require(output["jwk"]?.objectValue)
            let token = try #require(output["token"]?.stringValue)
            // The fraction reached the wire: exp = now - 0.75 + 3600.5 = now + 3599.75.
            #expect(output["payload"]?.stringValue?.contains(#""exp": \#(InteropJWT.now + 3599).75"#) == true, "\(result)")
            let verifier = JWTVerifier(keys: try JWKSet(keys: [JWSKey.jwk(JSON.serialize(.object(jwk)))]))
            var policy = ValidationPolicy()
            policy.leeway = 0
            policy.maxLifetime = 3600
            policy.issuer = "python@example.com"
            let verified = try verifier.verify(token, policy: policy, now: InteropJWT.now)
            #expect(verified.expiresAt == InteropJWT.now + 3599)
            _ = try verifier.verify(token, policy: policy, now: InteropJWT.now + 3598)
            #expect(throws: JWTValidationError(.expired, "")) { try verifier.verify(token, policy: policy, now: InteropJWT.now + 3599) }
        }
    }
}
