import AsyncHTTPClient
import Foundation
import JOSE
import OpenSSLPrimitives
import Testing
import TokenGateCore
import TokenGateHTTP
import TokenGateOutbound
import TokenGateTesting
import UpstreamTokenServer

/// An upstream's tokens are verified with keys of several accounts (a consumer signer and a driver signer): each token
/// type is bound to the accounts that may sign it, so a consumer is never served a token the driver's account signed
/// (at Fleet Engine the signing account's role decides what a token may do), and a binding left ambiguous is a
/// located configuration error.
@Suite(.timeLimit(.minutes(5))) struct UpstreamSignerBindingTests {
    static let consumerAccount = "consumer-signer@acme-rides.iam.gserviceaccount.com"
    static let driverAccount = "driver-signer@acme-rides.iam.gserviceaccount.com"
    static let apiKey = "dispatch-key-0123456789"

    static func configuration(_ upstream: ScriptedUpstream, bindings: (consumer: String, driver: String)) throws -> String {
        """
        providers:
          acme-rides:
            backend:
              type: upstream-http
              url: \(upstream.baseURL)/token?type={tokenType}
              tokenTypes: [consumer, driver]
              verify:
                - jwksUrl: \(upstream.baseURL)/consumer-jwks
                  serviceAccount: \(consumerAccount)
                  \(bindings.consumer)
                - jwksUrl: \(upstream.baseURL)/driver-jwks
                  serviceAccount: \(driverAccount)
                  \(bindings.driver)
            clients:
              - { name: dispatch, type: api-key, keySha256: \(HexBytes.encode(try Digest.sha256(Array(apiKey.utf8)))), allow: { consumer: any, driver: any } }
        """
    }

    static func token(for context: TokenContext, key: JWSKey, account: String) throws -> String {
        let claims = FleetEngineClaims.claims(
            serviceAccount: account, audience: FleetEngineClaims.defaultAudience, context: context,
            issuedAt: Int64(Date().timeIntervalSince1970), lifetime: 3600)
        return try JWSSigner(key: key).sign(claims: claims)
    }

    @Test func aConsumerIsNeverServedATokenTheDriversAccountSigned() async throws {
        let consumerKey = try TestKeys.other(0, keyID: "consumer-key")
        let driverKey = try TestKeys.other(1, keyID: "driver-key")
        let upstream = try await ScriptedUpstream.start()
        defer { Task { await upstream.stop() } }
        upstream.script("/consumer-jwks", [.json(String(decoding: try JWKSet(keys: [consumerKey.publicKey()]).publicJSON(), as: UTF8.self))])
        upstream.script("/driver-jwks", [.json(String(decoding: try JWKSet(keys: [driverKey.publicKey()]).publicJSON(), as: UTF8.self))])
        // Whatever it is asked, the upstream answers with a token the driver's account signed for the trip.
        let wrong = try Self.token(for: .trip(ContextID("trip-1")!), key: driverKey, account: Self.driverAccount)
        upstream.script("/token", [.json(#"{"token":"\#(wrong)"}"#)])
        try await TemporaryDirectory.with { directory in
            let path = try directory.write(
                "config.yaml", try Self.configuration(upstream, bindings: ("tokenTypes: [consumer]", "tokenTypes: [driver]")))
            let registry = BackendRegistry([UpstreamTokenServerFactory(httpClient: HTTPClient.shared)])
            try await RunningGateway.with(configuration: path, registry: registry, clock: .system) { gateway in
                #expect(try await eventually { try await gateway.get("/readyz").status == 200 })
                let refused = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-1", bearer: Self.apiKey)
                #expect(refused.status == 502 && refused.errorCode == "backend_invalid_token", "\(refused.text)")
                let scrape = MetricsScrape(try await gateway.metrics())
                #expect(
                    scrape["tokengate_tokens_rejected_total", ["provider": "acme-rides", "token_type": "consumer", "reason": "wrong_issuer"]] == 1)
                // Signed by the consumer's account, it is served.
                let right = try Self.token(for: .trip(ContextID("trip-2")!), key: consumerKey, account: Self.consumerAccount)
                upstream.script("/token", [.json(#"{"token":"\#(right)"}"#)])
                let served = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-2", bearer: Self.apiKey)
                #expect(served.status == 200, "\(served.text)")
            }
        }
    }

    @Test(arguments: [
        ("", "", "keys of 2 service accounts verify this backend's tokens: say which token types this one's account"),
        ("tokenTypes: [consumer]", "", "keys of 2 service accounts verify this backend's tokens"),
        ("tokenTypes: [consumer]", "tokenTypes: [fleet-reader]", "not a token type this backend issues (consumer, driver)"),
        ("tokenTypes: [consumer]", "tokenTypes: [consumer]", "no entry names the account that signs driver tokens"),
    ])
    func anAmbiguousBindingIsALocatedError(consumer: String, driver: String, message: String) async throws {
        let upstream = try await ScriptedUpstream.start()
        defer { Task { await upstream.stop() } }
        try await TemporaryDirectory.with { directory in
            let path = try directory.write("config.yaml", try Self.configuration(upstream, bindings: (consumer, driver)))
            let assembler = GatewayAssembler(
                registry: BackendRegistry([UpstreamTokenServerFactory(httpClient: HTTPClient.shared)]), environment: [:],
                logger: LogRecorder().logger, jwksFetcher: HTTPJWKSFetcher(client: HTTPClient.shared))
            do {
                _ = try await assembler.build(path: path)
                Issue.record("built")
            } catch let error as ConfigError {
                #expect(error.message.contains(message), "\(error)")
                #expect(error.keyPath.hasPrefix("providers.acme-rides.backend.verify"), "\(error)")
                #expect(error.mark != nil)
            }
        }
    }
}
