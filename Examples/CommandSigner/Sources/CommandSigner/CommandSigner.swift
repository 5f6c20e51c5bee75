import JOSE
public import TokenGateCore

/// Signs Fleet Engine tokens with an external command (see ``CommandSignerFactory`` for its configuration).
///
/// The backend writes the header and claims; the command only signs. It need not verify anything: the gateway
/// verifies every token with the `verify:` keys before a client sees it.
public struct CommandSigner: TokenBackend {
    let signing: SigningCommand
    let serviceAccount: String
    let keyID: String
    let audience: String
    let lifetimes: TokenLifetimes
    let clock: TokenGateClock

    public let tokenTypes: Set<TokenType>
    public let verificationKeys: [BoundKeySource]
    public var tokenLifetimes: TokenLifetimes? { lifetimes }
    public var summary: String {
        "signs with \(signing.program) as \(serviceAccount) (kid \(keyID)); lifetime \(lifetimes.describe(for: tokenTypes))"
    }
    public var signingKeys: [SigningKey] { [SigningKey(keyID: keyID, serviceAccount: serviceAccount)] }

    init(
        signing: SigningCommand, serviceAccount: String, keyID: String, audience: String, tokenTypes: Set<TokenType>,
        lifetimes: TokenLifetimes, verificationKeys: [BoundKeySource], clock: TokenGateClock
    ) {
        self.signing = signing
        self.serviceAccount = serviceAccount
        self.keyID = keyID
        self.audience = audience
        self.tokenTypes = tokenTypes
        self.lifetimes = lifetimes
        self.verificationKeys = verificationKeys
        self.clock = clock
    }

    public func issue(_ request: TokenRequest) async throws -> IssuedToken {
        let issuedAt = clock.wallSeconds()
        let lifetime = request.lifetime(issuedAt: issuedAt, configured: lifetimes.seconds(for: request.type))
        let claims = FleetEngineClaims.claims(
            serviceAccount: serviceAccount, audience: audience, context: request.context, issuedAt: issuedAt, lifetime: lifetime)
        let header: JSONObject = ["alg": "RS256", "typ": "JWT", "kid": .string(keyID)]
        let signingInput = Base64URL.encode(JSON.serialize(.object(header))) + "." + Base64URL.encode(JSON.serialize(.object(claims)))
        let signature = try await signing.sign(Array(signingInput.utf8))
        return IssuedToken(
            compact: signingInput + "." + Base64URL.encode(signature), keyID: keyID, expiresAt: issuedAt + lifetime, issuer: serviceAccount)
    }
}
