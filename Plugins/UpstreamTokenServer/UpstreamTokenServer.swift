package import TokenGateCore

/// A backend that fetches tokens from the provider's own token server.
///
/// Built by ``UpstreamTokenServerFactory``. It only fetches and reads the answer: the gateway verifies every token
/// against the `verify:` keys and the requested context before it is cached or handed out, and refuses a token
/// that fails (`backend_invalid_token`). The expiry the upstream states is passed on; the token's own `exp` wins.
package struct UpstreamTokenServer: TokenBackend {
    let provider: ProviderID
    let settings: UpstreamSettings
    let caller: UpstreamCaller
    let clock: TokenGateClock

    package var tokenTypes: Set<TokenType> { settings.tokenTypes }

    package var verificationKeys: [BoundKeySource] { settings.verify }

    package var summary: String { "\(settings.method.rawValue) \(settings.url.text)" }

    package func issue(_ request: TokenRequest) async throws -> IssuedToken {
        guard settings.tokenTypes.contains(request.type) else {
            throw TokenGateError(.unknownTokenType, "provider \(provider) does not fetch \(request.type) tokens")
        }
        let body = try await caller.fetchBody(for: request)
        let parsed = try settings.response.extract(from: body, now: clock.wallSeconds())
        return IssuedToken(
            compact: parsed.token, keyID: nil, expiresAt: parsed.claimedExpiry, issuers: settings.signers[request.context.tokenType] ?? [])
    }
}
