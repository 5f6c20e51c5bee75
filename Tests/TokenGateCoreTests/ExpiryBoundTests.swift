import Foundation
import JOSE
import Logging
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

/// A tenant's authorizer may bound a token by the trip's end (`until`); a backend that cannot honour the bound (one
/// that fetches tokens whose lifetime another server chose, as the test backend here does) gets its token refused,
/// never handed out nor cached.
@Suite struct ExpiryBoundTests {
    let clock = ManualClock(wallSeconds: 1_700_000_000)

    @Test func aTokenPastTheAuthorizersBoundIsRefusedAndNeverCached() async throws {
        let until = clock.now + 900
        let transport = ScriptedAuthorizerTransport(status: 200, body: #"{"allowed": true, "until": \#(until)}"#)
        let assembler = GatewayAssembler(
            registry: BackendRegistry([SigningTestFactory()]), environment: [:], clock: clock.gatewayClock,
            logger: Logger(label: "bound") { _ in SwiftLogNoOpLogHandler() }, jwksFetcher: ScriptedJWKSFetcher(.failure("none")),
            authorizerTransport: transport)
        let authorizer = #"authorizer: { type: http, url: "https://auth.acme.test/can?trip={tripId}" }"#
        let yaml = ProviderYAML.config(
            ProviderYAML(
                "acme-rides", backend: .flow("{ type: signing }"),
                clients: [ProviderYAML.apiKey("app", TestAPIKey("tg_bound_key"), extra: authorizer)]))
        let directory = try TemporaryDirectory(prefix: "bound").path
        let generation = try await assembler.build(
            bytes: Array(yaml.utf8), file: ConfigFile(path: directory + "/config.yaml", environment: [:]))
        let service = TokenService(
            generation: generation, formatter: { _ in TokenOnlyFormat() }, clock: clock.gatewayClock,
            logger: Logger(label: "bound") { _ in SwiftLogNoOpLogHandler() })
        let query = TokenQuery(
            providerID: "acme-rides", tokenType: "consumer", parameters: ["tripId": "trip-1"], authorization: "Bearer tg_bound_key")
        for _ in 0..<2 {
            let error = await #expect(throws: TokenGateError.self) { try await service.token(for: query) }
            #expect(error?.code == .backendInvalidToken)
            #expect(error?.reason.contains("outlives_bound") == true, "\(String(describing: error))")
        }
        // Not cached: each request asked the backend again.
        #expect(generation.providers[ProviderID("acme-rides")!]?.cache.count == 0)
    }
}
