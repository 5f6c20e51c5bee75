import Foundation
import JOSE
import Logging
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

/// The denial paths of a generation with two tenants: another tenant's API key is one lookup (403), a session token
/// is never verified on another tenant's behalf, failed authentications are limited without ever refusing a good
/// credential, and denials are logged in aggregate.
@Suite struct SafeDenialTests {
    static let acmeKey = "tg_acme"
    static let zoomKey = "tg_zoom"

    let clock = ManualClock(wallSeconds: 1_700_000_000)
    let idp: TestIdentityProvider
    let logs = LogRecorder()
    let service: TokenService
    let directory: URL

    init() async throws {
        idp = try TestIdentityProvider()
        directory = URL(fileURLWithPath: try TemporaryDirectory(prefix: "denials").path)
        let jwksPath = directory.appendingPathComponent("idp.jwks.json").path
        #expect(FileManager.default.createFile(atPath: jwksPath, contents: Data(try idp.jwks.publicJSON())))
        let riderApp = """
            { name: rider-app, type: jwt, jwksFile: "\(jwksPath)", issuer: "\(TestIdentityProvider.issuer)", \
            audience: \(TestIdentityProvider.audience), allow: { consumer: { claim: trips } } }
            """
        let yaml = ProviderYAML.config(
            preamble: """
                defaults:
                  rateLimits: { failedAuth: { rate: 60000/min, burst: 10000 }, failedAuthPerPeer: { rate: 60/min, burst: 5 } }

                """,
            ProviderYAML(
                "acme-rides", backend: .flow("{ type: inert, circuitBreaker: off }"),
                clients: [
                    ProviderYAML.apiKey("acme-backend", TestAPIKey(Self.acmeKey)),
                    ProviderYAML.apiKey("acme-old", TestAPIKey("tg_acme_old"), extra: "revoked: true"),
                    riderApp,
                ]),
            ProviderYAML(
                "zoom-cabs", backend: .flow("{ type: inert, circuitBreaker: off }"),
                clients: [ProviderYAML.apiKey("zoom-backend", TestAPIKey(Self.zoomKey))]))
        let assembler = GatewayAssembler(
            registry: BackendRegistry([InertBackendFactory()]), environment: [:], clock: clock.gatewayClock,
            logger: logs.logger, jwksFetcher: ScriptedJWKSFetcher(.failure("none")))
        let generation = try await assembler.build(
            bytes: Array(yaml.utf8), file: ConfigFile(path: directory.appendingPathComponent("config.yaml").path, environment: [:]))
        service = TokenService(
            generation: generation, formatter: { _ in TokenOnlyFormat() }, clock: clock.gatewayClock,
            logger: logs.logger)
    }

    func denial(_ provider: String, _ authorization: String?, peer: UInt32 = 0x7F00_0001) async -> TokenGateError? {
        let query = TokenQuery(
            providerID: provider, tokenType: "consumer", parameters: ["tripId": "trip-1"], authorization: authorization,
            peer: PeerAddress(ipv4: peer))
        do {
            _ = try await service.token(for: query)
            return nil
        } catch {
            return error
        }
    }

    var acmeAuthenticator: CallerAuthenticator { service.generation.providers[AuthFixtures.acme]!.authenticator }

    @Test func anAPIKeyOfAnotherProviderIsForbiddenNotUnauthenticated() async throws {
        #expect(await denial("zoom-cabs", "Bearer \(Self.acmeKey)")?.code == .forbidden)
        // Its own provider accepts it (and the inert backend then fails, which is past authentication).
        #expect(await denial("acme-rides", "Bearer \(Self.acmeKey)")?.code == .backendError)
    }

    @Test func aSessionTokenIsNeverVerifiedOnAnotherTenantsBehalf() async throws {
        let token = try idp.sessionToken(now: clock.now, ["trips": ["trip-1"]])
        #expect(await denial("zoom-cabs", "Bearer \(token)")?.code == .unauthenticated)
        #expect(acmeAuthenticator.sessionVerificationCount == 0)
    }

    @Test(arguments: [nil, "", "Bearer", "Bearer tg_nobody", "Bearer tg_acme_old"] as [String?])
    func unknownMissingMalformedOrRevokedStayUnauthenticated(header: String?) async {
        #expect(await denial("zoom-cabs", header)?.code == .unauthenticated)
    }

    @Test func aPeerThatKeepsFailingIsAnswered429AndItsSessionTokensAreShedBeforeTheirSignatureCheck() async throws {
        for _ in 0..<5 { #expect(await denial("acme-rides", "Bearer tg_wrong")?.code == .unauthenticated) }
        // Past the peer's burst a failure is answered 429, with when to come back.
        let limited = await denial("acme-rides", "Bearer tg_wrong")
        #expect(limited?.code == .rateLimited)
        #expect(limited?.retryAfterSeconds != nil)
        // A session token not verified before would cost a signature check: shed, nothing verified.
        let token = try idp.sessionToken(now: clock.now, ["trips": ["trip-1"]])
        #expect(await denial("acme-rides", "Bearer \(token)")?.code == .rateLimited)
        #expect(acmeAuthenticator.sessionVerificationCount == 0)
        // A good API key costs one SHA-256 and a lookup: never refused, even from this peer.
        #expect(await denial("acme-rides", "Bearer \(Self.acmeKey)")?.code == .backendError)
        // Another address is not affected; once verified there, the token is remembered and passes from here too.
        #expect(await denial("acme-rides", "Bearer \(token)", peer: 0x7F00_0002)?.code == .backendError)
        #expect(await denial("acme-rides", "Bearer \(token)")?.code == .backendError)
        #expect(acmeAuthenticator.sessionVerificationCount == 1)
        // Refill: one per second at 60/min.
        clock.advance(by: .seconds(1))
        let fresh = try idp.sessionToken(now: clock.now, ["trips": ["trip-1"], "sub": "rider-2"])
        #expect(await denial("acme-rides", "Bearer \(fresh)")?.code == .backendError)
    }

    @Test func denialsAreLoggedInAggregateNeverOneLinePerRequest() async throws {
        for index in 0..<500 { _ = await denial("nobody-here-\(index)", "Bearer x") }
        for _ in 0..<500 { _ = await denial("acme-rides", "Bearer \(Self.zoomKey)", peer: UInt32.random(in: 1...UInt32.max)) }
        #expect(logs.lines.count == 2, "\(logs.lines)")
        clock.advance(by: .seconds(11))
        service.flushDenialLog()
        let lines = logs.lines
        #expect(lines.count == 4)
        #expect(lines.contains { $0.contains("count=499") && $0.contains("code=unknown_provider") })
        #expect(lines.contains { $0.contains("count=499") && $0.contains("code=forbidden") })
        // Attacker text reaches the log escaped and truncated only.
        _ = await denial(String(repeating: "\u{1B}[31m", count: 20), "Bearer x")
        #expect(logs.lines.last?.contains("\u{1B}") == false)
    }
}

/// A body that is just the token.
struct TokenOnlyFormat: TokenBodyWriter {
    func byteCount(of token: DeliveredToken, context: TokenContext, now: Int64) -> Int { token.compact.utf8.count }
    func write(_ token: DeliveredToken, context: TokenContext, now: Int64, to sink: (UnsafeRawBufferPointer) -> Void) {
        var compact = token.compact
        compact.withUTF8 { sink(UnsafeRawBufferPointer($0)) }
    }
}
