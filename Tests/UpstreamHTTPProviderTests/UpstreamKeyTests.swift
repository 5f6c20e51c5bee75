import Foundation
import JOSE
import Logging
import Testing
import TokenGateCore
@testable import UpstreamHTTPProvider

/// The `verify:` keys: a JWKS fetched lazily and single-flight, one rate-limited refetch on an unknown kid, and the
/// last good set kept when the endpoint fails or serves garbage.
@Suite struct UpstreamKeyTests {
    static let request = TokenRequest(provider: UpstreamFixture.provider, context: UpstreamFixture.trip)

    @Test func theKeySetIsFetchedLazilyOnceForConcurrentCalls() async throws {
        try await UpstreamFixture.run { fixture in
            fixture.upstream.script("/token", [fixture.tokenResponse(try fixture.token())])
            let backend = try await fixture.backend()
            #expect(fixture.upstream.calls(to: "/jwks") == 0)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 { group.addTask { _ = try await backend.issue(Self.request) } }
                try await group.waitForAll()
            }
            #expect(fixture.upstream.calls(to: "/jwks") == 1)
            #expect(fixture.upstream.calls(to: "/token") == 8)
        }
    }

    @Test func anUnknownKidTriggersOneRateLimitedRefetch() async throws {
        try await UpstreamFixture.run { fixture in
            let rotated = try TestKeys.other(0, keyID: "rotated-1")
            let later = try TestKeys.other(1, keyID: "rotated-2")
            fixture.upstream.script("/jwks", [.json(try fixture.jwks([fixture.signer.key])), .json(try fixture.jwks([fixture.signer.key, rotated]))])
            let backend = try await fixture.backend()

            // The upstream rotated its key: the first fetch lacks it, the refetch has it.
            fixture.upstream.script("/token", [fixture.tokenResponse(try fixture.token(key: rotated))])
            let issued = try await backend.issue(Self.request)
            #expect(issued.keyID == "rotated-1")
            #expect(fixture.upstream.calls(to: "/jwks") == 2)

            // Another unknown kid within 30 s: no refetch, the token is refused.
            fixture.upstream.script("/jwks", [.json(try fixture.jwks([fixture.signer.key, rotated, later]))])
            fixture.upstream.script("/token", [fixture.tokenResponse(try fixture.token(key: later))])
            await #expect(throws: TokenGateError(.backendInvalidToken, "")) { _ = try await backend.issue(Self.request) }
            #expect(fixture.upstream.calls(to: "/jwks") == 2)
            #expect(try await backend.verificationKeys(refreshingFor: "rotated-2") == nil)
            #expect(fixture.upstream.calls(to: "/jwks") == 2)

            fixture.advance(seconds: 31)
            #expect(try await backend.issue(Self.request).keyID == "rotated-2")
            #expect(fixture.upstream.calls(to: "/jwks") == 3)
            let keys = try await backend.verificationKeys()
            #expect(keys.keySet.key(withID: "rotated-2") != nil)
            #expect(keys.issuers["rotated-2"] == UpstreamFixture.serviceAccount)
        }
    }

    @Test(arguments: ["500", "garbage", "empty set"])
    func theLastGoodSetIsKeptWhenARefetchFails(_ failure: String) async throws {
        try await UpstreamFixture.run { fixture in
            let yaml = fixture.config().replacingOccurrences(of: "      serviceAccount:", with: "      refreshInterval: 1m\n      serviceAccount:")
            let backend = try await fixture.backend(yaml)
            fixture.upstream.script("/token", [fixture.tokenResponse(try fixture.token())])
            _ = try await backend.issue(Self.request)
            #expect(fixture.upstream.calls(to: "/jwks") == 1)

            let bad: ScriptedUpstream.Action =
                switch failure {
                case "500": .json(#"{"error":"down"}"#, status: 500)
                case "garbage": .respond(status: 200, body: Array("<html>maintenance</html>".utf8))
                default: .json(#"{"keys":[]}"#)
                }
            fixture.upstream.script("/jwks", [bad])
            fixture.advance(seconds: 120)

            // Stale: refetched, failed, the last good set still verifies.
            _ = try await backend.issue(Self.request)
            #expect(fixture.upstream.calls(to: "/jwks") == 2)
            // An unknown kid within the rate limit of that failure is not fetched again, and changes nothing.
            #expect(try await backend.verificationKeys(refreshingFor: "nope") == nil)
            fixture.advance(seconds: 31)
            #expect(try await backend.verificationKeys(refreshingFor: "nope") == nil)
            let keys = try await backend.verificationKeys()
            #expect(keys.keySet.key(withID: fixture.signer.privateKeyID) != nil)
            #expect(fixture.logs.all().contains { $0.level == .warning && $0.message.contains("JWKS fetch failed") })

            // The endpoint recovers.
            fixture.upstream.script("/jwks", [.json(try fixture.jwks([fixture.signer.key]))])
            fixture.advance(seconds: 31)
            _ = try await backend.issue(Self.request)
            #expect(fixture.upstream.requests(to: "/jwks").count >= 4)
        }
    }

    @Test func withoutAnyKeySetTheCallIsUnavailableAndRecovers() async throws {
        try await UpstreamFixture.run { fixture in
            fixture.upstream.script("/jwks", [.json(#"{"error":"down"}"#, status: 503)])
            fixture.upstream.script("/token", [fixture.tokenResponse(try fixture.token())])
            let backend = try await fixture.backend()
            await #expect(throws: TokenGateError(.backendUnavailable, "")) { _ = try await backend.issue(Self.request) }
            fixture.upstream.script("/jwks", [.json(try fixture.jwks([fixture.signer.key]))])
            _ = try await backend.issue(Self.request)
        }
    }

    @Test func keysFromAJWKSFileNeedNoNetwork() async throws {
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
            fixture.upstream.script("/token", [fixture.tokenResponse(try fixture.token())])
            let backend = try await fixture.backend(yaml)
            _ = try await backend.issue(Self.request)
            #expect(try await backend.verificationKeys(refreshingFor: "other") == nil)
            #expect(fixture.upstream.calls(to: "/jwks") == 0)
        }
    }
}
