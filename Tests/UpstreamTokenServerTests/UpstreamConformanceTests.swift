import Foundation
import JOSE
import Testing
import TokenBackendConformance
import TokenGateCore
import TokenGateHTTP
import TokenGateOutbound
import TokenGateTesting
import UpstreamTokenServer

@Suite struct UpstreamConformanceTests {
    /// The upstream provider meets the backend contract against a token server that mints for whatever context it
    /// is asked about; its keys are fetched from that server's JWKS URL, and a server that refuses connections
    /// makes it fail with a `backend_*` code.
    @Test func theUpstreamProviderMeetsTheContract() async throws {
        try await UpstreamFixture.run { fixture in
            fixture.upstream.script("/token", [Self.minting(fixture)])
            let refusing = try await ScriptedUpstream.refusingPort()
            func section(base: String) -> String {
                """
                type: upstream-http
                url: \(base)/token?type={tokenType}&id={contextId}
                tokenTypes: [consumer, driver]
                timeouts: { connect: 5s, total: 10s }
                retries: { maxAttempts: 2, initialBackoff: 10ms, maxBackoff: 20ms }
                verify:
                  - jwksUrl: \(fixture.upstream.baseURL)/jwks
                    serviceAccount: \(UpstreamFixture.serviceAccount)
                """
            }
            let good = section(base: fixture.upstream.baseURL)
            let conformance = BackendConformance(
                factory: UpstreamTokenServerFactory(httpClient: fixture.client), section: good,
                jwksFetcher: HTTPJWKSFetcher(client: fixture.client), failingSection: section(base: "http://127.0.0.1:\(refusing)"),
                invalidSection: (yaml: good.replacingOccurrences(of: "{contextId}", with: "{taxiId}"), key: "url"),
                clock: TokenGateClock(wallSeconds: { UpstreamFixture.now }, monotonicNanoseconds: { 0 }),
                endWithin: TestTiming.bound(.seconds(5)))
            let violations = await conformance.violations()
            #expect(violations.isEmpty, "\(violations)")
        }
    }

    /// Mints a token for the type and context ID the request names.
    static func minting(_ fixture: UpstreamFixture) -> ScriptedUpstream.Action {
        .answer { request in
            let query = request.uri.split(separator: "?").last.map(String.init) ?? ""
            var fields: [String: String] = [:]
            for pair in query.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { fields[parts[0]] = parts[1] }
            }
            guard let type = fields["type"].flatMap(TokenType.init(rawValue:)), let id = fields["id"] else { return .respond(status: 400) }
            let parameter = type == .consumer ? "tripId" : "vehicleId"
            guard let context = try? TokenContext.parse(type: type, parameters: [parameter: id]),
                let token = try? fixture.token(for: context)
            else { return .respond(status: 400) }
            return fixture.tokenResponse(token)
        }
    }
}
