package import JOSE
package import TokenGateCore

/// A backend that mints Fleet Engine tokens itself with service-account keys it holds.
///
/// Per token type, one active key signs; older keys stay published so tokens they signed keep verifying while
/// a rotation rolls out. Signing is one RS256 operation and nothing else: no I/O after load.
package struct StaticKeySigner: TokenBackend {
    /// A key that signs one token type, and the service account it speaks for.
    package struct SigningIdentity: Sendable {
        /// Signs with the key.
        package let signer: JWSSigner
        /// The service account's email: `iss` and `sub`.
        package let serviceAccount: String
        /// When Google stops accepting the key (`expires:`), epoch seconds, if configured.
        package let expiresAt: Int64?
    }

    /// The active identity per token type.
    package let identities: [TokenType: SigningIdentity]
    /// Every configured key's public half, active or not, each bound to its service account.
    package let verificationKeys: [BoundKeySource]
    /// The types with a signing key; stored, because it is read on every request.
    package let tokenTypes: Set<TokenType>
    /// The `aud` claim.
    package let audience: String
    /// `exp - iat` per token type, at most one hour; shorter for the whole-fleet types (fleet readers, server),
    /// since a leaked one opens a whole fleet.
    package let lifetimes: TokenLifetimes
    package var tokenLifetimes: TokenLifetimes? { lifetimes }
    /// Wall-clock time for `iat`.
    package let clock: TokenGateClock

    init(
        identities: [TokenType: SigningIdentity], verificationKeys: [BoundKeySource], audience: String, lifetimes: TokenLifetimes,
        clock: TokenGateClock
    ) {
        self.identities = identities
        self.verificationKeys = verificationKeys
        self.tokenTypes = Set(identities.keys)
        self.audience = audience
        self.lifetimes = lifetimes
        self.clock = clock
    }

    package var signingKeys: [SigningKey] {
        var seen: Set<String> = []
        return identities.sorted { $0.key < $1.key }.compactMap { _, identity in
            guard let keyID = identity.signer.key.keyID, seen.insert(keyID).inserted else { return nil }
            return SigningKey(keyID: keyID, serviceAccount: identity.serviceAccount, expiresAt: identity.expiresAt)
        }
    }

    package var summary: String {
        let signing = identities.sorted { $0.key < $1.key }.map { "\($0.key.rawValue) signs with \($0.value.signer.key.keyID ?? "-")" }
        return "lifetime \(lifetimes.describe(for: tokenTypes)); " + signing.joined(separator: ", ")
    }

    package func issue(_ request: TokenRequest) async throws -> IssuedToken {
        try mint(for: request.context, notAfter: request.notAfter)
    }

    /// Signs a token for `context` now, expiring no later than `notAfter` when given. Synchronous: used by
    /// `tokengate mint` as well.
    package func mint(for context: TokenContext, notAfter: Int64? = nil) throws -> IssuedToken {
        guard let identity = identities[context.tokenType] else {
            throw TokenGateError(.unknownTokenType, "no signing key is configured for \(context.tokenType) tokens")
        }
        let now = clock.wallSeconds()
        let lifetime = FleetEngineClaims.lifetime(lifetimes.seconds(for: context.tokenType), issuedAt: now, notAfter: notAfter)
        let claims = FleetEngineClaims.claims(
            serviceAccount: identity.serviceAccount,
            audience: audience,
            context: context,
            issuedAt: now,
            lifetime: lifetime
        )
        let compact = try identity.signer.sign(claims: claims)
        return IssuedToken(compact: compact, keyID: identity.signer.key.keyID, expiresAt: now + lifetime, issuer: identity.serviceAccount)
    }
}
