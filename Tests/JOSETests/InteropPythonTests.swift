import Foundation
import JOSE
import Testing

/// Cross-checks against Python's `cryptography` package: a second, independent reading of JWK and JWS.
@Suite(.timeLimit(.minutes(5)))
struct InteropPythonTests {
    /// Verifies argv[2] (a compact JWS) with the public JWK in argv[1], rebuilt from its members only; also checks
    /// the JWK's shape (RFC 7518 section 6) and that a tampered token fails. Prints "verified <kty>".
    static let verifyProgram = #"""
        import base64, json, sys
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils

        def b64d(text):
            assert "=" not in text and "+" not in text and "/" not in text, "JWK/JWS must be unpadded base64url"
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

        def uint(text):
            raw = b64d(text)
            return int.from_bytes(raw, "big"), raw

        jwk = json.load(open(sys.argv[1]))
        token = open(sys.argv[2]).read().strip()
        assert jwk.get("use") == "sig", jwk
        assert "d" not in jwk and "p" not in jwk and "k" not in jwk, "private members in a public JWK"
        head, body, sig = token.split(".")
        header = json.loads(b64d(head))
        assert header["alg"] == jwk["alg"], (header, jwk)
        assert header.get("kid") == jwk.get("kid"), (header, jwk)
        signing_input = (head + "." + body).encode()
        signature = b64d(sig)

        if jwk["kty"] == "RSA":
            n, n_raw = uint(jwk["n"])
            e, e_raw = uint(jwk["e"])
            assert n_raw[0] != 0 and e_raw[0] != 0, "RSA n and e are minimal big-endian (no leading zero)"
            assert n.bit_length() >= 2048
            key = rsa.RSAPublicNumbers(e, n).public_key()
            pad = padding.PKCS1v15() if jwk["alg"].startswith("RS") else padding.PSS(
                mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.DIGEST_LENGTH)
            verify = lambda data: key.verify(signature, data, pad, hashes.SHA256())
        elif jwk["kty"] == "EC":
            assert jwk["crv"] == "P-256" and jwk["alg"] == "ES256", jwk
            x, x_raw = uint(jwk["x"])
            y, y_raw = uint(jwk["y"])
            assert len(x_raw) == 32 and len(y_raw) == 32, "EC x and y are full width (RFC 7518 6.2.1.2)"
            key = ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key()
            assert len(signature) == 64, "ES256 signature is R||S"
            der = utils.encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
            verify = lambda data: key.verify(der, data, ec.ECDSA(hashes.SHA256()))
        elif jwk["kty"] == "OKP":
            assert jwk["crv"] == "Ed25519" and jwk["alg"] == "EdDSA", jwk
            x, x_raw = uint(jwk["x"])
            assert len(x_raw) == 32
            key = ed25519.Ed25519PublicKey.from_public_bytes(x_raw)
            verify = lambda data: key.verify(signature, data)
        else:
            raise SystemExit("unexpected kty " + jwk["kty"])

        verify(signing_input)
        try:
            verify(signing_input + b"x")
            raise SystemExit("python accepted a tampered signing input")
        except InvalidSignature:
            pass
        print("verified", jwk["kty"])
        """#

    @Test(arguments: [JWSAlgorithm.es256, .rs256, .ps256, .edDSA])
    func pythonVerifiesATokenGateJWTFromItsPublicJWK(algorithm: JWSAlgorithm) async throws {
        try await withTemporaryDirectory { directory in
            let key = try JWSKey.generate(algorithm, keyID: "py-\(algorithm.rawValue)")
            try directory.write(try key.publicJWK(), to: "key.jwk")
            let claims = JSONObject(["sub": .string("interop"), "exp": .integer(InteropJWT.now + 60)])
            try directory.write(try JWSSigner(key: key).sign(claims: claims), to: "token.jwt")
            let result = try await Interop.python(Self.verifyProgram, ["key.jwk", "token.jwt"], in: directory)
            #expect(result.succeeded, "\(result)")
            #expect(result.stdout.hasPrefix("verified "), "\(result)")
        }
    }

    @Test func pythonVerifiesEveryKeyOfAPublishedJWKS() async throws {
        try await withTemporaryDirectory { directory in
            let keys = try [JWSAlgorithm.rs256, .es256, .edDSA].enumerated().map { index, algorithm in
                try JWSKey.generate(algorithm, keyID: "kid-\(index)")
            }
            let set = try JWKSet(keys: keys)
            let published = try JSON.parse(try set.publicJSON())
            guard case .object(let object) = published, case .array(let members)? = object["keys"] else {
                Issue.record("publicJSON is not {\"keys\":[…]}")
                return
            }
            #expect(members.count == keys.count)
            for (key, member) in zip(keys, members) {
                try directory.write(JSON.serialize(member), to: "key.jwk")
                try directory.write(
                    try JWSSigner(key: key).sign(claims: JSONObject(["n": .integer(1)])), to: "token.jwt")
                let result = try await Interop.python(Self.verifyProgram, ["key.jwk", "token.jwt"], in: directory)
                #expect(result.succeeded, "\(key.algorithm): \(result)")
            }
        }
    }

    /// Makes a key with `cryptography` for argv[1]'s algorithm, signs a JWT and prints
    /// {"jwk": public JWK, "private": private JWK, "token": compact JWS}.
    static let signProgram = #"""
        import base64, json, sys
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils

        def b64e(raw):
            return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

        def uint(value, width=None):
            width = width or (value.bit_length() + 7) // 8
            return b64e(value.to_bytes(width, "big"))

        alg, now = sys.argv[1], int(sys.argv[2])
        header = {"alg": alg, "typ": "JWT", "kid": "python-1"}
        claims = {"iss": "python@example.com", "sub": "interop", "iat": now - 10, "exp": now + 3600}
        signing_input = (b64e(json.dumps(header, separators=(",", ":")).encode()) + "." +
                         b64e(json.dumps(claims, separators=(",", ":")).encode())).encode()
        curves = {"ES256": (ec.SECP256R1(), "P-256", 32, hashes.SHA256()),
                  "ES384": (ec.SECP384R1(), "P-384", 48, hashes.SHA384()),
                  "ES512": (ec.SECP521R1(), "P-521", 66, hashes.SHA512())}
        rsa_hashes = {"256": hashes.SHA256(), "384": hashes.SHA384(), "512": hashes.SHA512()}
        if alg in curves:
            curve, crv, width, digest = curves[alg]
            key = ec.generate_private_key(curve)
            numbers = key.public_key().public_numbers()
            jwk = {"kty": "EC", "crv": crv, "x": uint(numbers.x, width), "y": uint(numbers.y, width)}
            private = dict(jwk, d=uint(key.private_numbers().private_value, width))
            r, s = utils.decode_dss_signature(key.sign(signing_input, ec.ECDSA(digest)))
            signature = r.to_bytes(width, "big") + s.to_bytes(width, "big")
        elif alg[:2] in ("RS", "PS"):
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            numbers = key.public_key().public_numbers()
            p = key.private_numbers()
            jwk = {"kty": "RSA", "n": uint(numbers.n), "e": uint(numbers.e)}
            private = dict(jwk, d=uint(p.d), p=uint(p.p), q=uint(p.q), dp=uint(p.dmp1), dq=uint(p.dmq1), qi=uint(p.iqmp))
            digest = rsa_hashes[alg[2:]]
            pad = padding.PKCS1v15() if alg.startswith("RS") else padding.PSS(
                mgf=padding.MGF1(digest), salt_length=padding.PSS.DIGEST_LENGTH)
            signature = key.sign(signing_input, pad, digest)
        elif alg == "EdDSA":
            key = ed25519.Ed25519PrivateKey.generate()
            raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            seed = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                     serialization.NoEncryption())
            jwk = {"kty": "OKP", "crv": "Ed25519", "x": b64e(raw)}
            private = dict(jwk, d=b64e(seed))
            signature = key.sign(signing_input)
        else:
            raise SystemExit("unexpected alg " + alg)
        for member in (jwk, private):
            member.update({"alg": alg, "use": "sig", "kid": "python-1"})
        print(json.dumps({"jwk": jwk, "private": private, "token": signing_input.decode() + "." + b64e(signature)}))
        """#

    static let pythonAlgorithms: [JWSAlgorithm] = [.es256, .es384, .es512, .rs256, .rs512, .ps256, .ps384, .edDSA]

    @Test(arguments: pythonAlgorithms)
    func tokenGateVerifiesAPythonSignedJWT(algorithm: JWSAlgorithm) async throws {
        try await withTemporaryDirectory { directory in
            let made = try await Self.pythonKeyAndToken(algorithm, in: directory)
            let key = try JWSKey.jwk(JSON.serialize(.object(made.publicJWK)))
            #expect(key.algorithm == algorithm)
            #expect(key.keyID == "python-1")
            #expect(!key.isPrivate)
            let verifier = JWTVerifier(keys: try JWKSet(keys: [key]))
            var policy = ValidationPolicy()
            policy.requireKeyID = true
            policy.issuer = "python@example.com"
            let verified = try verifier.verify(made.token, policy: policy, now: InteropJWT.now)
            #expect(verified.algorithm == algorithm)
            #expect(verified.keyID == "python-1")
            #expect(verified.claims["sub"] == .string("interop"))

            let forged = try InteropOpenSSLKeysTests.flippingSignatureBit(made.token)
            let error = #expect(throws: JWTValidationError.self) {
                try verifier.verify(forged, policy: policy, now: InteropJWT.now)
            }
            #expect(error?.reason == .badSignature)
        }
    }

    @Test(arguments: pythonAlgorithms)
    func aPythonPrivateJWKSignsForTheMatchingPublicJWK(algorithm: JWSAlgorithm) async throws {
        try await withTemporaryDirectory { directory in
            let made = try await Self.pythonKeyAndToken(algorithm, in: directory)
            let privateKey = try JWSKey.jwk(JSON.serialize(.object(made.privateJWK)))
            #expect(privateKey.isPrivate)
            #expect(privateKey.algorithm == algorithm)
            let publicKey = try JWSKey.jwk(JSON.serialize(.object(made.publicJWK)))
            // The public half TokenGate derives must be the key python published.
            let derived = try JSON.parse(try privateKey.publicJWK())
            guard case .object(let derivedMembers) = derived else {
                Issue.record("publicJWK is not an object")
                return
            }
            for member in ["kty", "crv", "x", "y", "n", "e", "kid", "alg"] {
                #expect(derivedMembers[member] == made.publicJWK[member], "\(algorithm) member \(member)")
            }
            for member in ["d", "p", "q", "dp", "dq", "qi"] { #expect(derivedMembers[member] == nil) }
            let token = try JWSSigner(key: privateKey).sign(claims: JSONObject(["sub": .string("interop")]))
            let (signingInput, signature) = try InteropJWT.split(token)
            #expect(publicKey.isValidSignature(signature, for: Array(signingInput.utf8)))
        }
    }

    struct PythonKey {
        let publicJWK: JSONObject
        let privateJWK: JSONObject
        let token: String
    }

    static func pythonKeyAndToken(
        _ algorithm: JWSAlgorithm, in directory: TemporaryDirectory
    ) async throws
        -> PythonKey
    {
        let result = try await Interop.python(
            Self.signProgram, [algorithm.rawValue, String(InteropJWT.now)], in: directory)
        try #require(result.succeeded, "\(result)")
        let output = try JSON.parse(Array(result.stdout.utf8))
        guard case .object(let object) = output, case .object(let publicJWK)? = object["jwk"],
            case .object(let privateJWK)? = object["private"], case .string(let token)? = object["token"]
        else { throw InteropError("unexpected python output: \(result.stdout)") }
        return PythonKey(publicJWK: publicJWK, privateJWK: privateJWK, token: token)
    }
}
