import Foundation
import JOSE
import Logging
import Testing
import TokenGateCore
import TokenGateTesting

@testable import UpstreamTokenServer

/// The `verify:` keys of an upstream provider, end to end: the JWKS URL is the gateway's one shared key set,
/// fetched by its refresher, refreshed early (and rate-limited) for an unknown kid, the last good set kept when the
/// endpoint fails or serves garbage.
@Suite struct UpstreamKeyTests {
    static let path = UpstreamGatewayTests.path
    static let apiKey = UpstreamGatewayTests.apiKey

    static func trip(_ id: String) -> String { "/v1/providers/acme-rides/tokens/consumer?tripId=\(id)" }
    static func context(_ id: String) -> TokenContext { .trip(ContextID(id)!) }

    @Test func oneFetchOfTheJWKSServesEveryRequest() async throws {
        try await UpstreamFixture.run { fixture in
            let clock = ManualClock(wallSeconds: UpstreamFixture.now)
            let tokens = try (0..<8).map { try fixture.token(for: .trip(ContextID("trip-\($0)")!)) }
            for (index, token) in tokens.enumerated() { fixture.upstream.script("/token/trip-\(index)", [fixture.tokenResponse(token)]) }
            let url = "\(fixture.upstream.baseURL)/token/{tripId}"
            try await UpstreamGatewayTests.withGateway(fixture, clock: clock, url: url) { gateway in
                try await UpstreamGatewayTests.waitForKeys(gateway)
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<8 { group.addTask { try await gateway.get(Self.trip("trip-\(index)"), bearer: Self.apiKey).status } }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                #expect(statuses == Array(repeating: 200, count: 8))
                #expect(fixture.upstream.calls(to: "/jwks") == 1)
            }
        }
    }

    /// `/readyz` (public and admin) is 503 while the real JWKS URL answers 500 and 200 once it answers; both
    /// fetches are counted by outcome.
    @Test func notReadyWhileTheJWKSURLAnswers500ThenReadyAndTheFetchesAreCounted() async throws {
        try await UpstreamFixture.run { fixture in
            fixture.upstream.script("/jwks", [.respond(status: 500), .json(try fixture.jwks([fixture.signer.key]))])
            let clock = ManualClock(wallSeconds: UpstreamFixture.now)
            try await UpstreamGatewayTests.withGateway(fixture, clock: clock) { gateway in
                let keySet = try #require(gateway.service.generation.keySets.keySets.values.first)
                #expect(try await eventually { keySet.lastFailure != nil })
                #expect(keySet.lastFailure?.contains("500") == true)
                let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
                #expect(try await gateway.get("/readyz").status == 503)
                let notReady = try await admin.get("/readyz")
                #expect(notReady.status == 503)
                #expect(notReady.text.contains("not_ready"))

                #expect(await keySet.refresh())
                #expect(try await gateway.get("/readyz").status == 200)
                #expect(try await admin.get("/readyz").status == 200)
                #expect(fixture.upstream.calls(to: "/jwks") == 2)
                let metrics = try await gateway.metrics()
                let url = "\(fixture.upstream.baseURL)/jwks"
                #expect(metrics.contains(#"tokengate_jwks_fetches_total{url="\#(url)",outcome="failure"} 1"#), "\(metrics)")
                #expect(metrics.contains(#"tokengate_jwks_fetches_total{url="\#(url)",outcome="success"} 1"#), "\(metrics)")
            }
        }
    }

    @Test func anUnknownKidTriggersOneRateLimitedRefetch() async throws {
        try await UpstreamFixture.run { fixture in
            let clock = ManualClock(wallSeconds: UpstreamFixture.now)
            let rotated = try TestKeys.other(0, keyID: "rotated-1")
            let later = try TestKeys.other(1, keyID: "rotated-2")
            fixture.upstream.script(
                "/jwks", [.json(try fixture.jwks([fixture.signer.key])), .json(try fixture.jwks([fixture.signer.key, rotated]))])
            try await UpstreamGatewayTests.withGateway(fixture, clock: clock) { gateway in
                try await UpstreamGatewayTests.waitForKeys(gateway)
                #expect(fixture.upstream.calls(to: "/jwks") == 1)
                // The upstream rotated its key: the set lacks it, the early refetch has it, the request waits for it.
                fixture.upstream.script("/token", [fixture.tokenResponse(try fixture.token(for: Self.context("trip-1"), key: rotated))])
                #expect(try await gateway.get(Self.trip("trip-1"), bearer: Self.apiKey).status == 200)
                #expect(fixture.upstream.calls(to: "/jwks") == 2)

                // Another unknown kid within 30 s: no refetch, the token is refused and not cached.
                fixture.upstream.script("/jwks", [.json(try fixture.jwks([fixture.signer.key, rotated, later]))])
                fixture.upstream.script("/token", [fixture.tokenResponse(try fixture.token(for: Self.context("trip-2"), key: later))])
                let refused = try await gateway.get(Self.trip("trip-2"), bearer: Self.apiKey)
                #expect(refused.status == 502)
                #expect(refused.text.contains("backend_invalid_token"))
                #expect(fixture.upstream.calls(to: "/jwks") == 2)

                clock.advance(by: .seconds(31))
                fixture.upstream.script("/token", [fixture.tokenResponse(try fixture.token(for: Self.context("trip-2"), key: later))])
                #expect(try await gateway.get(Self.trip("trip-2"), bearer: Self.apiKey).status == 200)
                #expect(fixture.upstream.calls(to: "/jwks") == 3)
            }
        }
    }

    /// Google's sample token servers and java-fleetengine-auth sign `header.payload` with IAM `signBlob`: no `kid`.
    @Test func keylessTokensOfAnUpstreamAreServedAndOneSignedByAnotherKeyIsRefused() async throws {
        try await UpstreamFixture.run { fixture in
            let clock = ManualClock(wallSeconds: UpstreamFixture.now)
            let logs = LogRecorder()
            let unnamed = try JWSKey.pem(try fixture.signer.key.privateKeyPEM(), algorithm: .rs256, keyID: nil)
            let stranger = try JWSKey.pem(try TestKeys.other(0, keyID: "x").privateKeyPEM(), algorithm: .rs256, keyID: nil)
            try await UpstreamGatewayTests.withGateway(fixture, clock: clock, logger: logs.logger) { gateway in
                try await UpstreamGatewayTests.waitForKeys(gateway)
                for trip in ["trip-1", "trip-2"] {
                    let token = try fixture.token(for: Self.context(trip), key: unnamed)
                    #expect(JWTVerifier.decodeUnverified(token).header?["kid"] == nil)
                    fixture.upstream.script("/token", [fixture.tokenResponse(token)])
                    #expect(try await gateway.get(Self.trip(trip), bearer: Self.apiKey).status == 200)
                }
                // Another key, no kid, claiming the account: only that account's keys are tried, and none fits.
                fixture.upstream.script("/token", [fixture.tokenResponse(try fixture.token(for: Self.context("trip-3"), key: stranger))])
                let refused = try await gateway.get(Self.trip("trip-3"), bearer: Self.apiKey)
                #expect(refused.status == 502 && refused.text.contains("backend_invalid_token"))
                // The right key, claiming an account no key of this provider is bound to: wrong_issuer.
                let foreign = try fixture.token(for: Self.context("trip-4"), key: unnamed, serviceAccount: "other@acme-rides.iam.gserviceaccount.com")
                fixture.upstream.script("/token", [fixture.tokenResponse(foreign)])
                #expect(try await gateway.get(Self.trip("trip-4"), bearer: Self.apiKey).status == 502)
                let metrics = try await gateway.metrics()
                #expect(metrics.contains(#"tokengate_tokens_without_kid_total{provider="acme-rides",token_type="consumer"} 2"#), "\(metrics)")
                #expect(metrics.contains(#"reason="bad_signature"} 1"#) && metrics.contains(#"reason="wrong_issuer"} 1"#), "\(metrics)")
            }
            // Logged once per provider, not once per token.
            #expect(logs.all.filter { $0.text.contains("tokens name no kid") }.count == 1)
        }
    }

    @Test(arguments: ["500", "garbage", "empty set"])
    func theLastGoodSetIsKeptWhenARefetchFails(_ failure: String) async throws {
        try await UpstreamFixture.run { fixture in
            let clock = ManualClock(wallSeconds: UpstreamFixture.now)
            let logs = LogRecorder()
            try await UpstreamGatewayTests.withGateway(fixture, clock: clock, logger: logs.logger) { gateway in
                try await UpstreamGatewayTests.waitForKeys(gateway)
                let bad: ScriptedUpstream.Action =
                    switch failure {
                    case "500": .json(#"{"error":"down"}"#, status: 500)
                    case "garbage": .respond(status: 200, body: Array("<html>maintenance</html>".utf8))
                    default: .json(#"{"keys":[]}"#)
                    }
                fixture.upstream.script("/jwks", [bad])
                // An unknown kid makes the gateway refetch; the refetch fails; the token stays refused.
                fixture.upstream.script(
                    "/token", [fixture.tokenResponse(try fixture.token(for: Self.context("trip-1"), key: try TestKeys.other(0, keyID: "nope")))])
                #expect(try await gateway.get(Self.trip("trip-1"), bearer: Self.apiKey).status == 502)
                #expect(fixture.upstream.calls(to: "/jwks") == 2)
                #expect(
                    logs.all.contains {
                        $0.level == .warning && $0.text.contains("JWKS not refreshed") && $0.text.contains("keeping the last good key set")
                    })
                // The last good set still verifies the signer's tokens.
                fixture.upstream.script("/token", [fixture.tokenResponse(try fixture.token(for: Self.context("trip-1")))])
                #expect(try await gateway.get(Self.trip("trip-1"), bearer: Self.apiKey).status == 200)
            }
        }
    }

    @Test func withoutAnyKeySetTheCallIsUnavailableAndRecovers() async throws {
        try await UpstreamFixture.run { fixture in
            let clock = ManualClock(wallSeconds: UpstreamFixture.now)
            fixture.upstream.script("/jwks", [.json(#"{"error":"down"}"#, status: 503)])
            fixture.upstream.script("/token", [fixture.tokenResponse(try fixture.token())])
            try await UpstreamGatewayTests.withGateway(fixture, clock: clock) { gateway in
                let unavailable = try await gateway.get(Self.path, bearer: Self.apiKey)
                #expect(unavailable.status == 503)
                #expect(unavailable.text.contains("backend_unavailable"))
                fixture.upstream.script("/jwks", [.json(try fixture.jwks([fixture.signer.key]))])
                // Past the early-refresh interval, the next request fetches the keys and is served.
                clock.advance(by: .seconds(31))
                #expect(try await gateway.get(Self.path, bearer: Self.apiKey).status == 200)
            }
        }
    }

    @Test func keysFromAJWKSFileAreFixedAndBoundToTheirServiceAccount() async throws {
        try await UpstreamFixture.run { fixture in
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID().uuidString).json").path
            _ = FileManager.default.createFile(atPath: path, contents: Data(try fixture.jwks([fixture.signer.key]).utf8))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let yaml = """
                backend:
                  type: upstream-http
                  url: \(fixture.upstream.baseURL)/token
                  tokenTypes: [consumer]
                  verify:
                    - jwksFile: \(path)
                      serviceAccount: \(UpstreamFixture.serviceAccount)
                """
            let backend = try await fixture.backend(yaml)
            let keys = try VerificationKeys(fixed: backend.verificationKeys)
            #expect(keys.keySet.key(withID: fixture.signer.privateKeyID) != nil)
            #expect(keys.issuers[fixture.signer.privateKeyID] == UpstreamFixture.serviceAccount)
            #expect(fixture.upstream.calls(to: "/jwks") == 0)
        }
    }
}
