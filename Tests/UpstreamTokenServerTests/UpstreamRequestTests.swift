import JOSE
import Logging
import Testing
import TokenGateCore
import TokenGateTesting

@testable import UpstreamTokenServer

/// What the backend sends (URL templating, POST body, headers from the environment) and how it reads answers.
@Suite struct UpstreamRequestTests {
    @Test func templatesPercentEncodeEveryValueIntoPathAndQuery() async throws {
        try await UpstreamFixture.run { fixture in
            let url = "\(fixture.upstream.baseURL)/t/{providerId}/{tokenType}/{vehicleId}?trip={tripId}&id={contextId}"
            let context = TokenContext.vehicle(ContextID("van+1@depot=2")!)
            fixture.upstream.script("/t/acme-rides/driver/van%2B1%40depot%3D2", [fixture.tokenResponse(try fixture.token(for: context))])
            let backend = try await fixture.backend(fixture.config(url: url))
            _ = try await backend.issue(TokenRequest(provider: UpstreamFixture.provider, context: context))
            let received = try #require(fixture.upstream.requests(to: "/t/acme-rides/driver/van%2B1%40depot%3D2").first)
            #expect(received.uri == "/t/acme-rides/driver/van%2B1%40depot%3D2?trip=&id=van%2B1%40depot%3D2")
            #expect(received.method == "GET")
            #expect(received.body.isEmpty)
        }
    }

    /// Any ID Fleet Engine takes travels percent-encoded as UTF-8, so the old token server reads back the ID the app
    /// sent (a space, `%`, `&`, `=`, a letter, an emoji), and the token it returns is checked for exactly that ID.
    @Test func templatesCarryAnyFleetEngineIDAsUTF8() async throws {
        try await UpstreamFixture.run { fixture in
            let url = "\(fixture.upstream.baseURL)/trips/{tripId}?id={contextId}"
            let context = TokenContext.trip(ContextID("p1 caf\u{E9}\u{1F695}%&=")!)
            let path = "/trips/p1%20caf%C3%A9%F0%9F%9A%95%25%26%3D"
            fixture.upstream.script(path, [fixture.tokenResponse(try fixture.token(for: context))])
            let backend = try await fixture.backend(fixture.config(url: url))
            _ = try await backend.issue(TokenRequest(provider: UpstreamFixture.provider, context: context))
            let received = try #require(fixture.upstream.requests(to: path).first)
            #expect(received.uri == "\(path)?id=p1%20caf%C3%A9%F0%9F%9A%95%25%26%3D")
        }
    }

    @Test func aDotOnlyContextIDNeverBecomesAPathSegment() async throws {
        try await UpstreamFixture.run { fixture in
            let backend = try await fixture.backend(fixture.config(url: "\(fixture.upstream.baseURL)/trips/{tripId}/token"))
            let request = TokenRequest(provider: UpstreamFixture.provider, context: .trip(ContextID("..")!))
            await #expect(throws: TokenGateError(.invalidRequest, "")) { _ = try await backend.issue(request) }
            #expect(fixture.upstream.requests(to: "/trips/../token").isEmpty)
        }
    }

    @Test func postSendsAJSONBodyAndHeadersFromTheEnvironment() async throws {
        try await UpstreamFixture.run { fixture in
            fixture.upstream.script("/mint", [fixture.tokenResponse(try fixture.token())])
            let yaml = fixture.config(
                url: "\(fixture.upstream.baseURL)/mint",
                extra: """
                      method: POST
                      headers: { X-Api-Key: "${ACME_TOKEN_SERVER_KEY}", X-Tenant: acme }
                    """
            )
            let backend = try await fixture.backend(yaml, environment: ["ACME_TOKEN_SERVER_KEY": "s3cret-value"])
            _ = try await backend.issue(TokenRequest(provider: UpstreamFixture.provider, context: UpstreamFixture.trip))
            let received = try #require(fixture.upstream.requests(to: "/mint").first)
            #expect(received.method == "POST")
            #expect(received.header("X-Api-Key") == "s3cret-value")
            #expect(received.header("X-Tenant") == "acme")
            #expect(received.header("Content-Type") == "application/json")
            let body = try JSON.parse(received.body)
            #expect(body == .object(["providerId": "acme-rides", "tokenType": "consumer", "context": .object(["tripId": "trip-42"])]))
            #expect(!fixture.logs.all.contains { $0.text.contains("s3cret-value") })
        }
    }

    @Test func anUnsetEnvironmentVariableFailsAtLoad() async throws {
        try await UpstreamFixture.run { fixture in
            let yaml = fixture.config(extra: "  headers: { X-Api-Key: \"${ACME_TOKEN_SERVER_KEY}\" }")
            let error = await #expect(throws: ConfigError.self) { _ = try await fixture.backend(yaml) }
            #expect(error?.description.contains("ACME_TOKEN_SERVER_KEY") == true)
            #expect(error?.description.contains("backend.headers.X-Api-Key") == true)
        }
    }

    struct ExpiryCase: Sendable, CustomStringConvertible {
        var format: String
        var value: Int64
        var description: String { format }
    }

    @Test(arguments: [
        ExpiryCase(format: "epoch-seconds", value: UpstreamFixture.now + 3600),
        ExpiryCase(format: "epoch-milliseconds", value: (UpstreamFixture.now + 3600) * 1000),
        ExpiryCase(format: "seconds-from-now", value: 3600),
    ])
    func anAgreeingExpiryFieldIsAcceptedQuietly(_ expiry: ExpiryCase) async throws {
        try await UpstreamFixture.run { fixture in
            fixture.upstream.script("/token", [.json(#"{"jwt":"\#(try fixture.token())","expiresAt":\#(expiry.value)}"#)])
            let yaml = fixture.config(extra: "  response: { tokenKey: jwt, expiryKey: expiresAt, expiryFormat: \(expiry.format) }")
            let backend = try await fixture.backend(yaml)
            let issued = try await backend.issue(TokenRequest(provider: UpstreamFixture.provider, context: UpstreamFixture.trip))
            #expect(issued.expiresAt == UpstreamFixture.now + 3600)
            #expect(!fixture.logs.all.contains { $0.metadata["reason"] == "expiry_mismatch" })
        }
    }

    @Test(arguments: [
        ExpiryCase(format: "epoch-seconds", value: UpstreamFixture.now + 7200),
        ExpiryCase(format: "epoch-milliseconds", value: (UpstreamFixture.now + 3600) * 1000 + 600_000),
        // The seed's Objective-C reading of an absolute time as "seconds from now".
        ExpiryCase(format: "seconds-from-now", value: UpstreamFixture.now + 3600),
    ])
    func aDisagreeingExpiryFieldIsLoggedAndTheTokensExpWins(_ expiry: ExpiryCase) async throws {
        try await UpstreamFixture.run { fixture in
            let token = try fixture.token()
            fixture.upstream.script("/token", [.json(#"{"jwt":"\#(token)","expiresAt":\#(expiry.value)}"#)])
            let extra = "  response: { tokenKey: jwt, expiryKey: expiresAt, expiryFormat: \(expiry.format) }"
            let logs = LogRecorder()
            let clock = ManualClock(wallSeconds: UpstreamFixture.now)
            try await UpstreamGatewayTests.withGateway(fixture, clock: clock, logger: logs.logger, extra: extra) { gateway in
                let response = try await gateway.get(UpstreamGatewayTests.path, bearer: UpstreamGatewayTests.apiKey)
                #expect(response.status == 200)
                // The gateway's own answer carries the token's exp, not the upstream's statement.
                #expect(response.json["expiresAt"] == .integer(UpstreamFixture.now + 3600))
                let warning = try #require(logs.all.first { $0.text.contains("expiry_mismatch") })
                #expect(warning.level == .warning)
                #expect(warning.text.contains("provider=acme-rides"))
                #expect(!warning.text.contains(token))
            }
        }
    }
}
