package import JOSE

/// Verifies a token exactly as the gateway does before it hands it to a client.
///
/// Signature, `alg` (RS256 only, bound to the key), a `kid` that names a known key (or, without one, a key bound to
/// the `iss` account), `aud`, `exp`
/// required, `iat` not ahead, lifetime at most one hour, `iss` bound to the key's service account, the
/// `authorization` claim exactly the one for the requested context, and at least `minRemaining` seconds left.
package struct FleetEngineVerifier: Sendable {
    /// The keys of the provider whose tokens this verifies.
    package var keys: VerificationKeys
    /// The expected `aud`.
    package var audience: String
    /// Clock skew tolerated on `exp`, `nbf` and `iat`, seconds.
    package var leeway: Int64
    /// The least life a token must have left to be handed out, seconds.
    package var minRemaining: Int64

    /// Creates a verifier.
    package init(keys: VerificationKeys, audience: String, leeway: Int64 = 60, minRemaining: Int64 = 0) {
        self.keys = keys
        self.audience = audience
        self.leeway = leeway
        self.minRemaining = minRemaining
    }

    /// The JOSE policy every Fleet Engine token meets.
    package var policy: ValidationPolicy {
        var policy = ValidationPolicy()
        policy.allowedAlgorithms = [.rs256]
        policy.requireKeyID = true
        policy.requireExpiration = true
        policy.audiences = [audience]
        policy.maxLifetime = FleetEngineClaims.maxLifetime
        policy.leeway = leeway
        return policy
    }

    /// Returns the verified token, or throws the first reason it must not reach a client.
    ///
    /// A token without a `kid` (Google's own token servers sign `header.payload` with IAM `signBlob` and write
    /// none) is verified against the keys bound to the service account its `iss` names, and only those: with
    /// none, it is `wrong_issuer`, never tried against another account's key. Its `verified.key.keyID` says which
    /// key it was.
    package func verify(_ token: String, for context: TokenContext, now: Int64) throws(TokenRejection) -> VerifiedJWT {
        let verified = try Self.namesNoKey(token) ? verifyWithIssuersKeys(token, now: now) : verifyWithNamedKey(token, now: now)
        // Fail closed: a key bound to no service account proves nothing about who issued the token.
        guard let keyID = verified.keyID ?? verified.key.keyID, let issuer = keys.issuers[keyID] else {
            throw TokenRejection(.wrongIssuer, "the signing key is bound to no service account")
        }
        guard verified.claims["iss"] == .string(issuer) else {
            throw TokenRejection(.wrongIssuer, "iss is not the service account of key '\(keyID)'")
        }
        try FleetEngineClaims.checkScope(of: verified.claims, for: context)
        guard let expiresAt = verified.expiresAt, expiresAt - now >= minRemaining else {
            throw TokenRejection(.insufficientLifetime, "less than \(minRemaining) s of life left")
        }
        return verified
    }

    /// Whether the token's header (when it can be read) has no `kid` member.
    static func namesNoKey(_ token: String) -> Bool {
        // The header alone answers for a token that names its key, every token the gateway mints: decoding the
        // whole token for this doubled the parsing of each mint's check. A kid-less one is decoded whole, as
        // before, so that a malformed rest still goes the named key's way and is refused as malformed.
        guard let header = JWTVerifier.decodeUnverifiedHeader(token), header["kid"] == nil else { return false }
        return JWTVerifier.decodeUnverified(token).header.map { $0["kid"] == nil } ?? false
    }

    private func verifyWithNamedKey(_ token: String, now: Int64) throws(TokenRejection) -> VerifiedJWT {
        do {
            return try JWTVerifier(keys: keys.keySet).verify(token, policy: policy, now: now)
        } catch {
            throw TokenRejection(error)
        }
    }

    /// A kid-less token checked with each key bound to the account its unverified `iss` names; the first whose
    /// signature verifies wins. Every other check is the usual one.
    private func verifyWithIssuersKeys(_ token: String, now: Int64) throws(TokenRejection) -> VerifiedJWT {
        guard case .string(let issuer)? = JWTVerifier.decodeUnverified(token).claims?["iss"] else {
            throw TokenRejection(.wrongIssuer, "a token without kid names no iss")
        }
        let candidates = keys.issuers.filter { $0.value == issuer }.keys.sorted().compactMap { keys.keySet.key(withID: $0) }
        guard !candidates.isEmpty else {
            throw TokenRejection(.wrongIssuer, "a token without kid, and no key is bound to the service account its iss names")
        }
        var policy = self.policy
        policy.requireKeyID = false
        var lastFailure = JWTValidationError(.badSignature, "The signature does not verify.")
        for key in candidates {
            do {
                return try JWTVerifier.verify(token, with: key, policy: policy, now: now)
            } catch {
                // Another key of the account may have signed it; any other failure is the token's own.
                guard error.reason == .badSignature || error.reason == .keyAlgMismatch else { throw TokenRejection(error) }
                lastFailure = error
            }
        }
        throw TokenRejection(lastFailure)
    }
}
