import JOSE
import OpenSSLPrimitives
import Testing

@testable import TokenGateCore

/// A tenant's identity provider for tests: a fresh signing key, its public JWKS, and session tokens on demand.
struct TestIdentityProvider {
    static let issuer = "https://idp.acme.test/"
    static let audience = "acme-rider-app"

    let key: JWSKey
    let jwks: JWKSet
    let issuer: String

    init(_ algorithm: JWSAlgorithm = .es256, keyID: String = "idp-1", issuer: String = Self.issuer) throws {
        key = try JWSKey.generate(algorithm, keyID: keyID)
        jwks = try JWKSet(keys: [key.publicKey()])
        self.issuer = issuer
    }

    /// A session token valid for an hour from `now`, with `claims` merged over the standard ones.
    func sessionToken(now: Int64, audience: String = Self.audience, lifetime: Int64 = 3600, _ claims: JSONObject = [:])
        throws -> String
    {
        var all: JSONObject = [
            "iss": .string(issuer), "aud": .string(audience), "sub": "user-1", "iat": .integer(now),
            "exp": .integer(now + lifetime),
        ]
        for (name, value) in claims { all[name] = value }
        return try JWSSigner(key: key).sign(claims: all)
    }

    /// A jwt client trusting this identity provider.
    func client(
        name: String = "rider-app", audiences: [String] = [Self.audience], leeway: Int64 = 30,
        allow: [TokenType: ClientConfig.Grant] = [.consumer: .claim("trips"), .driver: .claim("vehicle")],
        isRevoked: Bool = false
    ) -> ClientConfig {
        ClientConfig(
            name: name,
            credential: .jwt(SessionTokenSettings(keys: jwks, issuer: issuer, audiences: audiences, leeway: leeway)),
            allow: allow, isRevoked: isRevoked)
    }
}

extension CallerAuthenticator {
    /// An authenticator whose `jwksUrl:` clients use `keySets` (by URL); tests without such clients pass none.
    convenience init(
        provider: ProviderID, clients: [ClientConfig], clock: TokenGateClock, keySets: [RemoteKeySet] = [],
        sessionMemoLimit: Int = 100_000
    ) {
        let byURL = Dictionary(uniqueKeysWithValues: keySets.map { ($0.url.url, $0) })
        self.init(provider: provider, clients: clients, clock: clock, keySet: { byURL[$0.url]! }, sessionMemoLimit: sessionMemoLimit)
    }
}

enum AuthFixtures {
    static let acme = ProviderID("acme-rides")!
    static let zoom = ProviderID("zoom-cabs")!

    static func apiKeyClient(
        _ name: String, key: String, allow: [TokenType: ClientConfig.Grant] = [.consumer: .anyContext],
        isRevoked: Bool = false
    ) throws -> ClientConfig {
        ClientConfig(
            name: name, credential: .apiKey(sha256: try Digest.sha256(Array(key.utf8))), allow: allow,
            isRevoked: isRevoked)
    }

    static func trip(_ id: String) -> TokenContext { .trip(ContextID(id)!) }
    static func vehicle(_ id: String) -> TokenContext { .vehicle(ContextID(id)!) }
}

/// The `TokenGateError` that `body` throws, or nil; any other error fails the test.
func authError(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> TokenGateError? {
    do {
        try body()
        return nil
    } catch let error as TokenGateError {
        return error
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
