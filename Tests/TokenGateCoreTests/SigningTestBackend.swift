import JOSE
import TokenGateCore

/// `type: signing`: a backend that signs consumer tokens with one RSA key for one service account, so a test runs
/// real tokens through the real pipeline (verification included) without a plugin; it fails for the trips in
/// `failing`, as a backend that is down.
struct SigningTestFactory: TokenBackendFactory {
    static let key = try! JWSKey.generate(.rs256, keyID: "k1")
    static let account = "consumer@acme-rides.iam.gserviceaccount.com"

    var failing: Set<String> = []
    var type: String { "signing" }

    func makeBackend(_ context: BackendContext) async throws -> any TokenBackend { Backend(clock: context.clock, failing: failing) }

    struct Backend: TokenBackend {
        let clock: TokenGateClock
        let failing: Set<String>
        var tokenTypes: Set<TokenType> { [.consumer] }
        var verificationKeys: [BoundKeySource] {
            [BoundKeySource(.fixed(try! JWKSet(keys: [SigningTestFactory.key.publicKey()])), serviceAccount: SigningTestFactory.account)]
        }

        func issue(_ request: TokenRequest) async throws -> IssuedToken {
            if case .trip(let id) = request.context, failing.contains(id.rawValue) {
                throw TokenGateError(.backendUnavailable, "connection refused by token-server.internal:8443")
            }
            let claims = FleetEngineClaims.claims(
                serviceAccount: SigningTestFactory.account, audience: FleetEngineClaims.defaultAudience, context: request.context,
                issuedAt: clock.wallSeconds(), lifetime: 3600)
            return IssuedToken(compact: try JWSSigner(key: SigningTestFactory.key).sign(claims: claims), keyID: "k1", expiresAt: nil)
        }
    }
}
