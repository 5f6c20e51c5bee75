import Foundation
import JOSE
import Logging
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

/// A backend that knows which account signs a token type (static-key, google-iam) says so, and a token for that
/// type from any other account is refused, even one whose key the provider publishes: a rider never receives a
/// token the more privileged driver account signed.
@Suite struct IssuerOfTokenTypeTests {
    static let consumer = "consumer@acme-rides.iam.gserviceaccount.com"
    static let driver = "driver@acme-rides.iam.gserviceaccount.com"
    static let driverKey = try! JWSKey.generate(.rs256, keyID: "driver-key")
    static let consumerKey = try! JWSKey.generate(.rs256, keyID: "consumer-key")

    /// Issues every consumer token with the driver account's key and `iss`, stating `issuer` as the one it must be.
    struct MisissuingFactory: TokenBackendFactory {
        let issuer: String?
        var type: String { "misissuing" }

        func makeBackend(_ context: BackendContext) async throws -> any TokenBackend {
            Backend(issuer: issuer, clock: context.clock)
        }

        struct Backend: TokenBackend {
            let issuer: String?
            let clock: TokenGateClock
            var tokenTypes: Set<TokenType> { [.consumer] }
            var verificationKeys: [BoundKeySource] {
                [
                    BoundKeySource(
                        .fixed(try! JWKSet(keys: [IssuerOfTokenTypeTests.consumerKey.publicKey()])), serviceAccount: IssuerOfTokenTypeTests.consumer),
                    BoundKeySource(
                        .fixed(try! JWKSet(keys: [IssuerOfTokenTypeTests.driverKey.publicKey()])), serviceAccount: IssuerOfTokenTypeTests.driver),
                ]
            }

            func issue(_ request: TokenRequest) async throws -> IssuedToken {
                let claims = FleetEngineClaims.claims(
                    serviceAccount: IssuerOfTokenTypeTests.driver, audience: FleetEngineClaims.defaultAudience, context: request.context,
                    issuedAt: clock.wallSeconds(), lifetime: 3600)
                return IssuedToken(
                    compact: try JWSSigner(key: IssuerOfTokenTypeTests.driverKey).sign(claims: claims), keyID: "driver-key", expiresAt: nil,
                    issuer: issuer)
            }
        }
    }

    func outcome(issuer: String?) async throws -> TokenGateError.Code? {
        let clock = ManualClock(wallSeconds: 1_700_000_000)
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let yaml = ProviderYAML.config(
            ProviderYAML("acme-rides", backend: .flow("{ type: misissuing }"), clients: [ProviderYAML.apiKey("app", .dispatch)]))
        let assembler = GatewayAssembler(
            registry: BackendRegistry([MisissuingFactory(issuer: issuer)]), environment: [:], clock: clock.gatewayClock, logger: logger,
            jwksFetcher: ScriptedJWKSFetcher(.failure("none")))
        let generation = try await assembler.build(bytes: Array(yaml.utf8), file: ConfigFile(path: "config.yaml", environment: [:]))
        let service = TokenService(generation: generation, formatter: { _ in TokenOnlyFormat() }, clock: clock.gatewayClock, logger: logger)
        do {
            _ = try await service.token(
                for: TokenQuery(
                    providerID: "acme-rides", tokenType: "consumer", parameters: ["tripId": "t-1"], authorization: "Bearer \(TestAPIKey.dispatch)"))
            return nil
        } catch {
            return error.code
        }
    }

    @Test func aTokenFromAnotherAccountThanTheOneThatSignsTheTypeIsRefused() async throws {
        #expect(try await outcome(issuer: Self.consumer) == .backendInvalidToken)
        // A backend that cannot know (an upstream) states nothing: the key binding alone decides.
        #expect(try await outcome(issuer: nil) == nil)
    }
}
