import AsyncHTTPClient
import JOSE
import NIOCore
import Testing
import TokenGateCore
import TokenGateTesting

@testable import UpstreamTokenServer

/// Every way the tenant's token server can misbehave in transport or form: the right error code, no more calls than
/// the retry budget, and a later healthy answer works. Tokens that arrive but must not be served (bad signature,
/// `alg: none`, unknown kid, another trip, expired) are the gateway's to refuse: see `UpstreamGatewayTests`.
@Suite struct UpstreamFaultTests {
    enum Fault: String, CaseIterable, Sendable {
        case neverAnswers, tricklesBytes, htmlWith200, emptyBody, truncatedBody, tenMegabyteBody, tenMegabyteChunkedBody
        case missingTokenField, nonStringTokenField
        case unauthorized401, notFound404, redirectToAnotherPort

        /// What the upstream does, the code the caller gets, and the most token calls allowed.
        func script(_ fixture: UpstreamFixture) throws -> (actions: [ScriptedUpstream.Action], code: TokenGateError.Code) {
            switch self {
            case .neverAnswers: ([.neverAnswer], .backendTimeout)
            case .tricklesBytes: ([.trickle(interval: .milliseconds(50))], .backendTimeout)
            case .htmlWith200:
                (
                    [.respond(status: 200, headers: [("Content-Type", "text/html")], body: Array("<html><body>Login</body></html>".utf8))],
                    .backendError
                )
            case .emptyBody: ([.respond(status: 200)], .backendError)
            case .truncatedBody: ([.truncate(declaredLength: 400, body: Array(#"{"token":"eyJhbGciOi"#.utf8))], .backendError)
            case .tenMegabyteBody: ([.respond(status: 200, body: [UInt8](repeating: 0x20, count: 10 << 20))], .backendError)
            case .tenMegabyteChunkedBody: ([.respond(status: 200, body: [UInt8](repeating: 0x20, count: 10 << 20), chunked: true)], .backendError)
            case .missingTokenField: ([.json(#"{"jwt":"\#(try fixture.token())"}"#)], .backendError)
            case .nonStringTokenField: ([.json(#"{"token":{"value":"x"}}"#)], .backendError)
            case .unauthorized401: ([.json(#"{"error":"unauthorized"}"#, status: 401)], .backendError)
            case .notFound404: ([.json(#"{"error":"no such trip"}"#, status: 404)], .backendError)
            case .redirectToAnotherPort: ([], .backendError)
            }
        }

        /// Short timeouts where the fault is slowness; the longest allowed elsewhere, so a loaded machine cannot turn
        /// a prompt error into a timeout (in a full parallel run on two cores, one upstream call once took 30 s).
        var timeouts: String {
            self == .neverAnswers || self == .tricklesBytes ? "{ connect: 300ms, total: 600ms }" : UpstreamFixture.generousTimeouts
        }

    }

    @Test(arguments: Fault.allCases)
    func faultGetsItsCodeWithinTheBudgetAndAHealthyAnswerRecovers(_ fault: Fault) async throws {
        try await UpstreamFixture.run { fixture in
            let script = try fault.script(fixture)
            var actions = script.actions
            let elsewhere = try await ScriptedUpstream.start()
            defer { Task { await elsewhere.stop() } }
            if fault == .redirectToAnotherPort {
                elsewhere.script("/token", [fixture.tokenResponse(try fixture.token())])
                actions = [.respond(status: 302, headers: [("Location", "\(elsewhere.baseURL)/token?trip=trip-42")])]
            }
            fixture.upstream.script("/token", actions)
            let backend = try await fixture.backend(fixture.config(timeouts: fault.timeouts))
            let request = TokenRequest(provider: UpstreamFixture.provider, context: UpstreamFixture.trip)

            await #expect(throws: TokenGateError(script.code, "")) { _ = try await backend.issue(request) }
            // None of these faults is retryable: one call, no backoff.
            #expect(fixture.upstream.calls(to: "/token") == 1)
            #expect(fixture.sleeps.withLock { $0 }.isEmpty)
            #expect(elsewhere.calls(to: "/token") == 0)

            let healthy = try fixture.token()
            fixture.upstream.script("/token", [fixture.tokenResponse(healthy)])
            let issued = try await backend.issue(request)
            #expect(issued.compact == healthy)
            // The backend only reads the answer; the gateway verifies the token and takes its exp.
            #expect(issued.expiresAt == nil)
            #expect(!fixture.logs.all.contains { $0.text.contains(healthy) })
        }
    }

    @Test func refusedConnectionsAreUnavailableAfterTheRetryBudgetAndALaterServerRecovers() async throws {
        try await UpstreamFixture.run { fixture in
            let port = try await ScriptedUpstream.refusingPort()
            let backend = try await fixture.backend(fixture.config(url: "http://127.0.0.1:\(port)/token?trip={tripId}"))
            let request = TokenRequest(provider: UpstreamFixture.provider, context: UpstreamFixture.trip)
            await #expect(throws: TokenGateError(.backendUnavailable, "")) { _ = try await backend.issue(request) }
            // Three attempts, so two backoffs: 10 ms, then 20 ms (jitter factor 1).
            #expect(fixture.sleeps.withLock { $0 } == [.milliseconds(10), .milliseconds(20)])

            let revived = try await ScriptedUpstream.start(port: port)
            defer { Task { await revived.stop() } }
            revived.script("/token", [fixture.tokenResponse(try fixture.token())])
            _ = try await backend.issue(request)
            #expect(revived.calls(to: "/token") == 1)
        }
    }

    @Test(arguments: [503, 500, 429])
    func retryableStatusesUseTheWholeBudgetThenSucceedLater(_ status: Int) async throws {
        try await UpstreamFixture.run { fixture in
            fixture.upstream.script("/token", [.json(#"{"error":"busy"}"#, status: status)])
            let backend = try await fixture.backend()
            let request = TokenRequest(provider: UpstreamFixture.provider, context: UpstreamFixture.trip)
            let error = await #expect(throws: TokenGateError(.backendUnavailable, "")) { _ = try await backend.issue(request) }
            #expect(fixture.upstream.calls(to: "/token") == 3, "\(error?.reason ?? "no error")")
            #expect(fixture.sleeps.withLock { $0 } == [.milliseconds(10), .milliseconds(20)])

            fixture.upstream.script("/token", [.json(#"{"error":"busy"}"#, status: status), fixture.tokenResponse(try fixture.token())])
            _ = try await backend.issue(request)
            #expect(fixture.upstream.calls(to: "/token") == 5)
        }
    }

    @Test func a503WithRetryAfterIsHonouredAndReported() async throws {
        try await UpstreamFixture.run { fixture in
            fixture.upstream.script("/token", [.respond(status: 503, headers: [("Retry-After", "1")])])
            let backend = try await fixture.backend()
            let request = TokenRequest(provider: UpstreamFixture.provider, context: UpstreamFixture.trip)
            let error = await #expect(throws: TokenGateError.self) { _ = try await backend.issue(request) }
            #expect(error?.code == .backendUnavailable)
            #expect(error?.retryAfterSeconds == 1)
            #expect(fixture.upstream.calls(to: "/token") == 3)
            #expect(fixture.sleeps.withLock { $0 } == [.seconds(1), .seconds(1)])
        }
    }

    @Test func aRetryAfterBeyondTheDeadlineIsReportedWithoutWaiting() async throws {
        try await UpstreamFixture.run { fixture in
            fixture.upstream.script("/token", [.respond(status: 503, headers: [("Retry-After", "120")])])
            let backend = try await fixture.backend()
            let request = TokenRequest(provider: UpstreamFixture.provider, context: UpstreamFixture.trip)
            let error = await #expect(throws: TokenGateError.self) { _ = try await backend.issue(request) }
            #expect(error?.code == .backendUnavailable)
            #expect(error?.retryAfterSeconds == 120)
            #expect(fixture.upstream.calls(to: "/token") == 1)
            #expect(fixture.sleeps.withLock { $0 }.isEmpty)
        }
    }

    @Test func anAnswerFromARedirectIsRefusedEvenByAClientThatFollowsRedirects() async throws {
        try await UpstreamFixture.run { fixture in
            let following = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: HTTPClient.Configuration())
            let elsewhere = try await ScriptedUpstream.start()
            elsewhere.script("/token", [fixture.tokenResponse(try fixture.token())])
            fixture.upstream.script("/token", [.respond(status: 307, headers: [("Location", "\(elsewhere.baseURL)/token")])])
            let backend = try await fixture.backend(client: following)
            let request = TokenRequest(provider: UpstreamFixture.provider, context: UpstreamFixture.trip)
            await #expect(throws: TokenGateError(.backendError, "")) { _ = try await backend.issue(request) }
            try await following.shutdown()
            await elsewhere.stop()
        }
    }

    @Test func aTokenForAnotherTypeIsNeverFetched() async throws {
        try await UpstreamFixture.run { fixture in
            let backend = try await fixture.backend()
            let request = TokenRequest(provider: UpstreamFixture.provider, context: .deliveryVehicle(ContextID("van-1")!))
            await #expect(throws: TokenGateError(.unknownTokenType, "")) { _ = try await backend.issue(request) }
            #expect(fixture.upstream.calls(to: "/token") == 0)
        }
    }
}
