import JOSE
import Logging
import Testing
import TokenGateCore
import TokenGateTesting

@Suite struct LoggingTests {
    @Test func logsNeverHoldATokenOrACredentialButDoNameTheReason() async throws {
        let fixture = try GatewayFixture()
        let logs = LogRecorder()
        let session = try fixture.sessionToken(claims: ["trips": .string("trip-1")])
        let served = try await fixture.withGateway(logs: logs) { gateway in
            var tokens: [String] = []
            let ok = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-1", bearer: GatewayFixture.apiKey)
            tokens.append(try #require(ok.json["token"]?.stringValue))
            _ = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-1", bearer: session)
            _ = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-2", bearer: session)
            _ = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-1", bearer: "wrong-key-0123456789")
            fixture.probe.misbehave(true)
            _ = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-3", bearer: GatewayFixture.apiKey)
            return tokens
        }
        let entries = logs.all
        #expect(entries.contains { $0.text.contains("code=forbidden") })
        #expect(entries.contains { $0.text.contains("code=unauthenticated") })
        #expect(entries.contains { $0.level == .error && $0.text.contains("code=backend_invalid_token") && $0.text.contains("wrong_context") })
        let secrets = served + [session, GatewayFixture.apiKey, "wrong-key-0123456789"]
        for entry in entries {
            #expect(!entry.text.contains("eyJ"), "a log entry holds a JWS: \(entry.text.prefix(120))")
            #expect(!entry.text.contains("BEGIN"), "a log entry holds key material")
            for secret in secrets { #expect(!entry.text.contains(secret)) }
        }
    }
}
