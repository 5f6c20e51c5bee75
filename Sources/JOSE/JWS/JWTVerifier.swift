/// Verifies compact JWS/JWT against a key set.
///
/// Order: size cap; three segments (five → `jwe_not_supported`, other → `malformed`); strict base64url; header
/// JSON object without duplicate names, string `alg` (and string `kid` if present), `crit` rejected; `alg`
/// allowed; key chosen by `kid`, compared code point by code point (an unknown kid is rejected; a token without a
/// kid is only matched against keys that have no kid either, and only when one of those fits);
/// `alg` must equal the key's algorithm; signature; then, unless `signatureOnly`, the payload is a JSON object
/// and `exp`/`nbf`/`iat` (with leeway), `iss`, `aud` (any-of), lifetime and `typ` are checked.
public struct JWTVerifier: Sendable {
    /// The keys tokens may be signed with.
    public let keys: JWKSet

    /// A verifier over `keys`.
    public init(keys: JWKSet) { self.keys = keys }

    /// The verified token, or the first failed check as a stable reason. `now` is epoch seconds.
    public func verify(_ token: String, policy: ValidationPolicy, now: Int64) throws(JWTValidationError) -> VerifiedJWT {
        try verify(token, policy: policy, now: now, chosenKey: nil)
    }

    /// Verifies a token that names no key (no `kid`) with `key`, which the caller chose by other means (the
    /// keys bound to the issuer the token claims): every check of ``verify(_:policy:now:)`` but the key
    /// selection. A token that does name a key is refused (`unknownKid`) unless it names this one.
    public static func verify(
        _ token: String, with key: JWSKey, policy: ValidationPolicy, now: Int64
    ) throws(JWTValidationError) -> VerifiedJWT {
        try JWTVerifier(keys: JWKSet.empty).verify(token, policy: policy, now: now, chosenKey: key)
    }

    private func verify(_ token: String, policy: ValidationPolicy, now: Int64, chosenKey: JWSKey?) throws(JWTValidationError) -> VerifiedJWT {
        guard token.utf8.count <= policy.maxTokenBytes else {
            throw JWTValidationError(.tokenTooLarge, "The token is longer than \(policy.maxTokenBytes) bytes.")
        }
        let compact = try CompactJWS(token)
        let header = try compact.header()
        guard case .string(let algorithmName)? = header["alg"] else {
            throw JWTValidationError(.malformed, "The header has no string \"alg\".")
        }
        var keyID: String?
        if let kid = header["kid"] {
            guard case .string(let kid) = kid else { throw JWTValidationError(.malformed, "\"kid\" is not a string.") }
            keyID = kid
        }
        if let chosenKey, let keyID, keyID != chosenKey.keyID {
            throw JWTValidationError(.unknownKid, "The token names another key than the one chosen.")
        }
        if header["crit"] != nil {
            throw JWTValidationError(.unsupportedCrit, "The header lists critical extensions; none are supported.")
        }
        guard let algorithm = JWSAlgorithm(rawValue: algorithmName) else {
            throw JWTValidationError(.algNotAllowed, "Algorithm \(Sanitized.quote(algorithmName)) is not accepted.")
        }
        if let allowed = policy.allowedAlgorithms, !allowed.contains(algorithm) {
            throw JWTValidationError(.algNotAllowed, "Algorithm \(algorithm) is not in the allow-list.")
        }
        let key: JWSKey
        if let chosenKey {
            key = chosenKey
        } else {
            key = try selectKey(keyID: keyID, algorithm: algorithm, policy: policy)
        }
        // The key, not the token, decides the algorithm: this is what stops RS256/HS256 confusion.
        guard key.algorithm == algorithm else {
            throw JWTValidationError(.keyAlgMismatch, "The header says \(algorithm); the key is bound to \(key.algorithm).")
        }
        guard compact.isSignatureValid(with: key) else {
            throw JWTValidationError(.badSignature, "The signature does not verify.")
        }
        let claims: JSONObject
        if policy.signatureOnly {
            claims = (try? compact.claims()) ?? JSONObject()
        } else {
            claims = try compact.claims()
            try ClaimsCheck(claims: claims, policy: policy, now: now).run()
            try checkType(header, policy: policy)
        }
        return VerifiedJWT(
            header: header, claims: claims, payload: compact.payload, algorithm: algorithm, keyID: keyID, key: key)
    }

    private func selectKey(keyID: String?, algorithm: JWSAlgorithm, policy: ValidationPolicy) throws(JWTValidationError)
        -> JWSKey
    {
        if let keyID {
            guard let key = keys.key(withID: keyID) else {
                throw JWTValidationError(.unknownKid, "No key has the token's kid.")
            }
            return key
        }
        if policy.requireKeyID { throw JWTValidationError(.missingKid, "The header has no \"kid\".") }
        // A key published with a kid is only ever chosen by that kid: a kid-less token must not reach it by
        // default, so the candidates are the keys without a kid.
        let unnamed = keys.keys.filter { $0.keyID == nil }
        if unnamed.count == 1 { return unnamed[0] }
        let fitting = unnamed.filter { $0.algorithm == algorithm }
        switch fitting.count {
        case 1: return fitting[0]
        case 0 where keys.keys.contains(where: { $0.algorithm == algorithm }):
            throw JWTValidationError(.missingKid, "Only keys with a kid fit \(algorithm); the token needs a \"kid\".")
        case 0: throw JWTValidationError(.keyAlgMismatch, "No key without a kid is bound to \(algorithm).")
        default: throw JWTValidationError(.missingKid, "Several keys fit \(algorithm); the token needs a \"kid\".")
        }
    }

    private func checkType(_ header: JSONObject, policy: ValidationPolicy) throws(JWTValidationError) {
        guard let required = policy.requiredType else { return }
        // ASCII case folding only (RFC 7515 section 4.1.9): Unicode lowercasing turns U+212A KELVIN SIGN into "k".
        guard case .string(let type)? = header["typ"], type.isASCIICaseInsensitiveEqual(to: required) else {
            throw JWTValidationError(.wrongType, "The header typ is not \(Sanitized.quote(required)).")
        }
    }

    /// Parses header and claims WITHOUT checking anything cryptographic: for display in `verify-token` only.
    /// Tokens over 16 KiB (`ValidationPolicy().maxTokenBytes`) are not parsed: both come back nil.
    public static func decodeUnverified(_ token: String) -> (header: JSONObject?, claims: JSONObject?) {
        guard token.utf8.count <= ValidationPolicy().maxTokenBytes, let compact = try? CompactJWS(token) else {
            return (nil, nil)
        }
        return (try? compact.header(), try? compact.claims())
    }

    /// The header of `token`, decoded without verifying anything and without decoding the rest: for choosing how to
    /// verify it, never for trusting it. Nil when the first segment is not a base64url JSON object.
    public static func decodeUnverifiedHeader(_ token: String) -> JSONObject? {
        let utf8 = token.utf8
        guard utf8.count <= ValidationPolicy().maxTokenBytes, let dot = utf8.firstIndex(of: UInt8(ascii: ".")),
            let bytes = Base64URL.decode(utf8: utf8[..<dot]), case .object(let header)? = try? JSON.parse(bytes)
        else { return nil }
        return header
    }
}
