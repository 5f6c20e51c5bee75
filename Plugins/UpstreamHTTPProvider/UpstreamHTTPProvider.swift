public import TokenGateCore
import JOSE
import Logging

/// A backend that fetches tokens from the provider's own token server and verifies each one before use.
///
/// Built by ``UpstreamHTTPProviderFactory``. Every token is checked with ``FleetEngineVerifier`` against the
/// `verify:` keys and the requested context; a token that fails is reported as `backend_invalid_token` and is
/// never returned, so it can never be cached.
public struct UpstreamHTTPProvider: TokenBackend {
    let provider: ProviderID
    let settings: UpstreamSettings
    let caller: UpstreamCaller
    let keyStore: UpstreamKeyStore
    let audience: String
    let clock: TokenGateClock
    let logger: Logger
    /// Clock skew tolerated when verifying, and the most the expiry field may differ from `exp` unremarked.
    let leeway: Int64 = 60

    public var tokenTypes: Set<TokenType> { settings.tokenTypes }

    public func issue(_ request: TokenRequest) async throws -> IssuedToken {
        guard settings.tokenTypes.contains(request.type) else {
            throw TokenGateError(.unknownTokenType, "provider \(provider) does not fetch \(request.type) tokens")
        }
        let body = try await caller.fetchBody(for: request)
        let parsed = try settings.response.extract(from: body, now: clock.wallSeconds())
        let verified = try await verify(parsed.token, for: request.context)
        guard let expiresAt = verified.expiresAt else {
            throw TokenGateError(.backendInvalidToken, "the upstream token has no exp")
        }
        if let claimed = parsed.claimedExpiry, claimed > expiresAt + leeway || claimed < expiresAt - leeway {
            logger.warning(
                "upstream expiry field disagrees with the token's exp; using exp",
                metadata: [
                    "provider": "\(provider)",
                    "reason": "expiry_mismatch",
                    "expiryField": "\(claimed)",
                    "exp": "\(expiresAt)",
                ]
            )
        }
        return IssuedToken(compact: parsed.token, keyID: verified.keyID, expiresAt: expiresAt)
    }

    public func verificationKeys() async throws -> VerificationKeys {
        try await keyStore.current()
    }

    public func verificationKeys(refreshingFor unknownKeyID: String) async throws -> VerificationKeys? {
        try await keyStore.refreshed()
    }

    /// Verifies exactly as the gateway will; an unknown `kid` triggers one rate-limited refetch and one more try.
    private func verify(_ token: String, for context: TokenContext) async throws -> VerifiedJWT {
        var keys = try await keyStore.current()
        var refetched = false
        while true {
            let verifier = FleetEngineVerifier(keys: keys, audience: audience, leeway: leeway)
            do {
                return try verifier.verify(token, for: context, now: clock.wallSeconds())
            } catch {
                if error.reason.rawValue == JWTValidationError.Reason.unknownKid.rawValue, !refetched {
                    refetched = true
                    if let fresh = try await keyStore.refreshed() {
                        keys = fresh
                        continue
                    }
                }
                logger.warning(
                    "upstream token rejected",
                    metadata: ["provider": "\(provider)", "reason": "\(error.reason)"]
                )
                throw TokenGateError(.backendInvalidToken, "the upstream token failed verification: \(error)")
            }
        }
    }
}
