public import JOSE

/// Verifies a token exactly as the gateway does before it hands it to a client.
///
/// Signature, `alg` (RS256 only, bound to the key), a required `kid` that names a known key, `aud`, `exp`
/// required, `iat` not ahead, lifetime at most one hour, `iss` bound to the key's service account, the
/// `authorization` claim exactly the one for the requested context, and at least `minRemaining` seconds left.
public struct FleetEngineVerifier: Sendable {
    /// The keys of the provider whose tokens this verifies.
    public var keys: VerificationKeys
    /// The expected `aud`.
    public var audience: String
    /// Clock skew tolerated on `exp`, `nbf` and `iat`, seconds.
    public var leeway: Int64
    /// The least life a token must have left to be handed out, seconds.
    public var minRemaining: Int64

    /// Creates a verifier.
    public init(keys: VerificationKeys, audience: String, leeway: Int64 = 60, minRemaining: Int64 = 0) {
        self.keys = keys
        self.audience = audience
        self.leeway = leeway
        self.minRemaining = minRemaining
    }

    /// The JOSE policy every Fleet Engine token meets.
    public var policy: ValidationPolicy {
        var policy = ValidationPolicy()
        policy.allowedAlgorithms = [.rs256]
        policy.requireKeyID = true
        policy.requireExpiration = true
        policy.audiences = [audience]
        policy.maxLifetime = FleetEngineToken.maxLifetime
        policy.leeway = leeway
        return policy
    }

    /// Returns the verified token, or throws the first reason it must not reach a client.
    public func verify(_ token: String, for context: TokenContext, now: Int64) throws(TokenRejection) -> VerifiedJWT {
        let verified: VerifiedJWT
        do {
            verified = try JWTVerifier(keys: keys.keySet).verify(token, policy: policy, now: now)
        } catch {
            throw TokenRejection(error)
        }
        // Fail closed: a key bound to no service account proves nothing about who issued the token.
        guard let keyID = verified.keyID, let issuer = keys.issuers[keyID] else {
            throw TokenRejection(.wrongIssuer, "the signing key is bound to no service account")
        }
        guard verified.claims["iss"] == .string(issuer) else {
            throw TokenRejection(.wrongIssuer, "iss is not the service account of key '\(keyID)'")
        }
        try FleetEngineToken.checkScope(of: verified.claims, for: context)
        guard let expiresAt = verified.expiresAt, expiresAt - now >= minRemaining else {
            throw TokenRejection(.insufficientLifetime, "less than \(minRemaining) s of life left")
        }
        return verified
    }
}
