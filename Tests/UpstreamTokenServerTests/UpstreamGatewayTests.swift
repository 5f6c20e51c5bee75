import AsyncHTTPClient
import JOSE
import Logging
import Testing
import TokenGateCore
import TokenGateTesting
import UpstreamTokenServer

/// The upstream plugin behind the real gateway: cache, single flight and stale serving end to end.
@Suite struct UpstreamGatewayTests {
    static let apiKey = "dispatch-key-0123456789"
    static let path = "/v1/providers/acme-rides/tokens/consumer?tripId=trip-42"

    /// Runs `body` with the gateway fronting the fixture's scripted upstream.
    static func withGateway(
        _ fixture: UpstreamFixture,
        clock: ManualClock,
        logger: Logger = Logger(label: "tokengate-test", factory: { _ in SwiftLogNoOpLogHandler() }),
        url: String? = nil,
        extra: String = "",
        _ body: (RunningGateway) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try directory.write(
            "config.yaml",
            ProviderYAML.config(
                ProviderYAML(
                    "acme-rides", backend: .yaml(fixture.config(url: url, extra: extra)),
                    clients: [ProviderYAML.apiKey("dispatch", TestAPIKey(apiKey))]))
        )
        let registry = BackendRegistry([UpstreamTokenServerFactory(httpClient: fixture.client)])
        try await RunningGateway.with(configuration: path, registry: registry, clock: clock.gatewayClock, logger: logger, body)
    }

    /// Waits (bounded) until the gateway's refresher has fetched every JWKS URL once.
    static func waitForKeys(_ gateway: RunningGateway) async throws {
        if try await eventually({ gateway.service.generation.keySets.keySets.values.allSatisfy { $0.current() != nil } }) { return }
        Issue.record("the JWKS was not fetched within 30 s")
    }

    /// Clock skew between the gateway and the upstream that minted the token: a token whose `iat` lies up to the
    /// leeway (60 s) in the gateway's future is accepted, one second more is refused; a gateway clock ahead of the
    /// upstream only shortens the token's remaining life (the cache's `minRemaining` still holds).
    @Test(arguments: [(30, true), (59, true), (60, true), (61, false), (300, false), (-30, true), (-59, true), (-61, true), (-300, true)])
    func clockSkewIsToleratedUpToTheLeewayExactly(_ skew: Int64, _ accepted: Bool) async throws {
        try await UpstreamFixture.run { fixture in
            let clock = ManualClock(wallSeconds: UpstreamFixture.now)
            let token = try fixture.token(issuedAt: UpstreamFixture.now + skew)
            fixture.upstream.script("/token", [fixture.tokenResponse(token)])
            try await Self.withGateway(fixture, clock: clock) { gateway in
                try await Self.waitForKeys(gateway)
                let response = try await gateway.get(Self.path, bearer: Self.apiKey)
                #expect(response.status == (accepted ? 200 : 502), "skew \(skew)s: \(response.text)")
                if accepted { #expect(response.json["expiresAt"] == .integer(UpstreamFixture.now + skew + 3600)) }
            }
        }
    }

    /// Tokens that arrive but must never be served: the gateway refuses each (502), caches none, and recovers.
    @Test(arguments: ["bad signature", "alg none", "unknown kid", "another trip", "expired"])
    func aTokenThatFailsVerificationIsRefusedAndNeverCached(_ fault: String) async throws {
        try await UpstreamFixture.run { fixture in
            let clock = ManualClock(wallSeconds: UpstreamFixture.now)
            let kid = fixture.signer.privateKeyID
            let bad: String =
                switch fault {
                case "bad signature": try fixture.token(key: try TestKeys.other(keyID: kid))
                case "alg none":
                    Base64URL.encode(Array(#"{"alg":"none","typ":"JWT","kid":"\#(kid)"}"#.utf8)) + "."
                        + String(try fixture.token().split(separator: ".")[1]) + "."
                case "unknown kid": try fixture.token(key: try TestKeys.other(keyID: "rotated-away"))
                case "another trip": try fixture.token(for: .trip(ContextID("trip-43")!))
                default: try fixture.token(issuedAt: UpstreamFixture.now - 4000)
                }
            let healthy = try fixture.token()
            fixture.upstream.script("/token", [fixture.tokenResponse(bad), fixture.tokenResponse(healthy)])
            let logs = LogRecorder()
            try await Self.withGateway(fixture, clock: clock, logger: logs.logger) { gateway in
                try await Self.waitForKeys(gateway)
                let refused = try await gateway.get(Self.path, bearer: Self.apiKey)
                #expect(refused.status == 502)
                #expect(refused.text.contains("backend_invalid_token"))
                #expect(!logs.all.contains { $0.text.contains(bad) })
                #expect(try await gateway.get(Self.path, bearer: Self.apiKey).json["token"] == .string(healthy))
                #expect(fixture.upstream.calls(to: "/token") == 2)
            }
        }
    }

    @Test func aHerdOfTwoHundredRequestsAtExpiryMakesOneUpstreamCall() async throws {
        try await UpstreamFixture.run { fixture in
            let clock = ManualClock(wallSeconds: UpstreamFixture.now)
            let first = try fixture.token()
            let second = try fixture.token(issuedAt: UpstreamFixture.now + 56 * 60)
            fixture.upstream.script("/token", [fixture.tokenResponse(first), fixture.tokenResponse(second)])
            try await Self.withGateway(fixture, clock: clock) { gateway in
                #expect(try await gateway.get(Self.path, bearer: Self.apiKey).json["token"] == .string(first))
                // 4 minutes left: below minRemaining, so every caller needs the next token at once.
                clock.advance(by: .seconds(56 * 60))
                let tokens = try await withThrowingTaskGroup(of: JSONValue?.self) { group in
                    for _ in 0..<200 { group.addTask { try await gateway.get(Self.path, bearer: Self.apiKey).json["token"] } }
                    return try await group.reduce(into: [JSONValue?]()) { $0.append($1) }
                }
                #expect(tokens.count == 200)
                #expect(tokens.allSatisfy { $0 == .string(second) })
                #expect(fixture.upstream.calls(to: "/token") == 2)
            }
        }
    }

    /// The trial-run finding: a token signed by the right key but issued in another service account's name.
    @Test func aTokenSignedByTheRightKeyWithAForeignIssuerIsRefusedAndNeverCached() async throws {
        try await UpstreamFixture.run { fixture in
            let clock = ManualClock(wallSeconds: UpstreamFixture.now)
            let forged = try fixture.token(serviceAccount: "attacker@evil-project.iam.gserviceaccount.com")
            let honest = try fixture.token()
            fixture.upstream.script("/token", [fixture.tokenResponse(forged), fixture.tokenResponse(honest)])
            let logs = LogRecorder()
            try await Self.withGateway(fixture, clock: clock, logger: logs.logger) { gateway in
                let refused = try await gateway.get(Self.path, bearer: Self.apiKey)
                #expect(refused.status == 502)
                #expect(refused.text.contains("backend_invalid_token"))
                #expect(!refused.text.contains(forged))
                let logged = logs.all.map(\.text)
                #expect(logged.contains { $0.contains("wrong_issuer") }, "\(logged)")
                #expect(!logged.contains { $0.contains(forged) })
                // Not cached: the next request goes to the upstream again and gets the honest token.
                let served = try await gateway.get(Self.path, bearer: Self.apiKey)
                #expect(served.json["token"] == .string(honest))
                #expect(fixture.upstream.calls(to: "/token") == 2)
            }
        }
    }

    @Test func aValidCachedTokenKeepsBeingServedWhileTheUpstreamFails() async throws {
        try await UpstreamFixture.run { fixture in
            let clock = ManualClock(wallSeconds: UpstreamFixture.now)
            let first = try fixture.token()
            fixture.upstream.script("/token", [fixture.tokenResponse(first), .respond(status: 503)])
            try await Self.withGateway(fixture, clock: clock) { gateway in
                #expect(try await gateway.get(Self.path, bearer: Self.apiKey).json["token"] == .string(first))
                // 8 minutes left: inside refreshBefore, the refresh fails, the still-valid token is served.
                clock.advance(by: .seconds(52 * 60))
                for _ in 0..<3 {
                    let response = try await gateway.get(Self.path, bearer: Self.apiKey)
                    #expect(response.status == 200)
                    #expect(response.json["token"] == .string(first))
                    await gateway.service.waitForBackgroundRefreshes()
                }
                let callsWhileFailing = fixture.upstream.calls(to: "/token")
                #expect((2...4).contains(callsWhileFailing), "one refresh (3 attempts at most) per retry interval")
                // Below minRemaining the upstream is asked first; while it fails, the token is still served down to
                // cache.staleIfErrorFloor (60 s left)...
                clock.advance(by: .seconds(4 * 60))
                let stale = try await gateway.get(Self.path, bearer: Self.apiKey)
                #expect(stale.status == 200)
                #expect(stale.json["token"] == .string(first))
                #expect(fixture.upstream.calls(to: "/token") > callsWhileFailing, "the upstream was asked again")
                // ...and below that the failure reaches the caller.
                clock.advance(by: .seconds(3 * 60 + 30))
                let failed = try await gateway.get(Self.path, bearer: Self.apiKey)
                #expect(failed.status == 503)
                #expect(failed.json["error"] != nil)
                // A later healthy answer recovers.
                let fresh = try fixture.token(issuedAt: clock.now)
                fixture.upstream.script("/token", [fixture.tokenResponse(fresh)])
                #expect(try await gateway.get(Self.path, bearer: Self.apiKey).json["token"] == .string(fresh))
            }
        }
    }

    /// A retried upstream call is counted per provider on the admin listener's `/metrics`.
    @Test func upstreamRetriesAreCounted() async throws {
        try await UpstreamFixture.run { fixture in
            fixture.upstream.script("/token", [.json(#"{"error":"busy"}"#, status: 503), fixture.tokenResponse(try fixture.token())])
            try await Self.withGateway(fixture, clock: ManualClock(wallSeconds: UpstreamFixture.now)) { gateway in
                try await Self.waitForKeys(gateway)
                let response = try await gateway.get(
                    "/v1/providers/acme-rides/tokens/consumer?tripId=\(UpstreamFixture.trip.id!.rawValue)", bearer: Self.apiKey)
                #expect(response.status == 200, "\(response.text)")
                let metrics = try await gateway.metrics()
                #expect(metrics.contains(#"tokengate_upstream_retries_total{provider="acme-rides"} 1"#), "\(metrics)")
                #expect(metrics.contains(#"tokengate_backend_calls_total{provider="acme-rides",token_type="consumer"} 1"#))
            }
        }
    }
}

extension GatewayResponse {
    /// The body as a JSON object (empty if it is not one).
    var json: JSONObject {
        if case .object(let object)? = try? JSON.parse(body) { return object }
        return JSONObject()
    }
}
