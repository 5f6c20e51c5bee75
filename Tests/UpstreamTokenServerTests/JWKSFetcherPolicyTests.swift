import AsyncHTTPClient
import NIOCore
import OutboundHTTP
import Testing
import TokenGateHTTP
import TokenGateOutbound
import UpstreamTokenServer

/// `HTTPJWKSFetcher` under the one outbound policy it shares with the upstream and Google clients, against a real
/// misbehaving server: a fetch ends by its deadline even when the key server trickles its body, and keys from a
/// redirect, an error status or an oversized body are never returned.
@Suite struct JWKSFetcherPolicyTests {
    static let jwks = #"{"keys":[]}"#

    static func withFetcher(_ body: (HTTPJWKSFetcher, ScriptedUpstream) async throws -> Void) async throws {
        let server = try await ScriptedUpstream.start()
        let client = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: OutboundExchange.clientConfiguration())
        do {
            try await body(HTTPJWKSFetcher(client: client, timeout: .milliseconds(500)), server)
        } catch {
            try await client.shutdown()
            await server.stop()
            throw error
        }
        try await client.shutdown()
        await server.stop()
    }

    @Test func aKeySetIsReturnedAsSent() async throws {
        try await Self.withFetcher { fetcher, server in
            server.script("/jwks", [.json(Self.jwks)])
            let keys = try await fetcher.fetchJWKS(from: "\(server.baseURL)/jwks")
            #expect(keys == Array(Self.jwks.utf8))
        }
    }

    @Test func aTrickledBodyEndsTheFetchAtItsDeadline() async throws {
        try await Self.withFetcher { fetcher, server in
            server.script("/jwks", [.trickle(interval: .milliseconds(50))])
            let started = ContinuousClock.now
            let error = await #expect(throws: (any Error).self) { try await fetcher.fetchJWKS(from: "\(server.baseURL)/jwks") }
            #expect("\(error.map { "\($0)" } ?? "")".contains("did not send its keys within"))
            // Before the shared policy, the 5 s deadline covered the head only, and a trickled body held the fetch open.
            #expect(ContinuousClock.now - started < .seconds(30))
        }
    }

    /// What the key server does instead of sending keys, and the reason the fetch gives.
    enum Refusal: String, CaseIterable, Sendable {
        case serverError, redirect, oversizedBody

        var action: ScriptedUpstream.Action {
            switch self {
            case .serverError: .json(#"{"error":"x"}"#, status: 500)
            case .redirect: .respond(status: 302, headers: [("Location", "/elsewhere")])
            case .oversizedBody: .respond(status: 200, body: [UInt8](repeating: 0x20, count: 1 << 20))
            }
        }

        var reason: String {
            switch self {
            case .serverError: "answered HTTP 500"
            case .redirect: "answered HTTP 302"
            case .oversizedBody: "more than 524288 bytes"
            }
        }
    }

    @Test(arguments: Refusal.allCases)
    func noKeysComeFromAnErrorARedirectOrAnOversizedBody(_ refusal: Refusal) async throws {
        try await Self.withFetcher { fetcher, server in
            server.script("/jwks", [refusal.action])
            server.script("/elsewhere", [.json(Self.jwks)])
            let error = await #expect(throws: (any Error).self) { try await fetcher.fetchJWKS(from: "\(server.baseURL)/jwks") }
            #expect("\(error.map { "\($0)" } ?? "")".contains(refusal.reason))
            #expect(server.calls(to: "/elsewhere") == 0)
        }
    }
}
