import Foundation
import JOSE
import Logging
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

/// A request is admitted once, whichever door it came in by: the event loop's door hands a miss on with its
/// admission, and the full path finishes it on the generation that admitted it (a reload in between does not
/// re-judge it), while every later request is judged by the new generation.
@Suite struct AdmissionOnceTests {
    let clock = ManualClock(wallSeconds: 1_700_000_000)
    let assembler: GatewayAssembler
    let directory: String

    init() throws {
        let logger = Logger(label: "admission") { _ in SwiftLogNoOpLogHandler() }
        assembler = GatewayAssembler(
            registry: BackendRegistry([SigningTestFactory()]), environment: [:], clock: clock.gatewayClock, logger: logger,
            jwksFetcher: ScriptedJWKSFetcher(.failure("none")))
        directory = try TemporaryDirectory(prefix: "admission").path
    }

    /// A generation whose one api-key client holds `apiKey`.
    func generation(apiKey: String, previous: GatewayGeneration? = nil) async throws -> GatewayGeneration {
        let yaml = ProviderYAML.config(
            ProviderYAML("acme-rides", backend: .flow("{ type: signing }"), clients: [ProviderYAML.apiKey("app", TestAPIKey(apiKey))]))
        return try await assembler.build(
            bytes: Array(yaml.utf8), file: ConfigFile(path: directory + "/config.yaml", environment: [:]), previous: previous)
    }

    static func query(_ apiKey: String, trip: String = "trip-1") -> TokenQuery {
        TokenQuery(providerID: "acme-rides", tokenType: "consumer", parameters: ["tripId": trip], authorization: "Bearer \(apiKey)")
    }

    @Test func aMissHandedOnFinishesOnTheGenerationThatAdmittedIt() async throws {
        let first = try await generation(apiKey: "tg_old_key")
        let service = TokenService(
            generation: first, formatter: { _ in TokenOnlyFormat() }, clock: clock.gatewayClock,
            logger: Logger(label: "admission") { _ in SwiftLogNoOpLogHandler() })
        guard case .needsFullPath(let admission) = service.cachedToken(for: Self.query("tg_old_key")) else {
            Issue.record("an empty cache must hand the request on")
            return
        }
        // The key is rotated before the handed-on request reaches the full path.
        service.install(try await generation(apiKey: "tg_new_key", previous: first))
        let grant = try await service.token(for: admission)
        #expect(JWTVerifier.decodeUnverified(grant.token.compact).claims?["authorization"] == .object(["tripid": .string("trip-1")]))
        // Every request from now on is judged by the new generation.
        await #expect(throws: TokenGateError.self) { try await service.token(for: Self.query("tg_old_key", trip: "trip-2")) }
        guard case .refused(let error) = service.cachedToken(for: Self.query("tg_old_key")) else {
            Issue.record("the rotated-out key must be refused on the event loop too")
            return
        }
        #expect(error.code == .unauthenticated)
        guard case .granted = service.cachedToken(for: Self.query("tg_new_key")) else {
            Issue.record("the token the handed-on request minted is cached for the new key's caller")
            return
        }
    }
}
