import Foundation
import JOSE
import StaticKeySigner
import Synchronization
import Testing
import TokenGateCore
import TokenGateCoreTesting
import TokenGateTesting

/// `/readyz` tells the truth: 503 until every provider's JWKS URLs have been fetched once, ready but "degraded" on
/// a last good set, and a client may opt out with `requiredForReadiness: false`.
@Suite(.timeLimit(.minutes(5))) struct ReadinessTests {
    static let url = "https://login.acme.test/jwks.json"

    static func configuration(requiredForReadiness: Bool? = nil) -> String {
        let optOut = requiredForReadiness.map { "requiredForReadiness: \($0), " } ?? ""
        let riderApp = """
            { name: rider-app, type: jwt, jwksUrl: "\(url)", issuer: "https://login.acme.test/", audience: acme-rider-app, \
            \(optOut)allow: { consumer: { claim: trips } } }
            """
        return ProviderYAML.config(
            ProviderYAML("acme-rides", backend: .staticKey(["consumer"], file: "keys/consumer.json"), clients: [riderApp]))
    }

    func withGateway(_ yaml: String, fetcher: SwitchableJWKSFetcher, _ body: (RunningGateway) async throws -> Void) async throws {
        try await TemporaryDirectory.with { directory in
            let path = try directory.write("config.yaml", yaml)
            try await RunningGateway.with(
                configuration: path, registry: BackendRegistry([StaticKeySignerFactory()]), clock: ManualClock().gatewayClock,
                jwksFetcher: fetcher, body)
        }
    }

    static func keySet(_ gateway: RunningGateway) throws -> RemoteKeySet {
        try #require(gateway.service.generation.keySets.keySets[url])
    }

    @Test func notReadyWhileTheJWKSURLFailsThenReadyThenDegradedOnItsLastGoodKeys() async throws {
        let fetcher = SwitchableJWKSFetcher()
        fetcher.fail("HTTP 500")
        try await withGateway(Self.configuration(), fetcher: fetcher) { gateway in
            let keySet = try Self.keySet(gateway)
            let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
            await keySet.refresh()
            // The public listener says whether, and nothing about the tenants: that stays on the admin listener.
            let publicAnswer = try await gateway.get("/readyz")
            #expect(publicAnswer.status == 503)
            #expect(publicAnswer.json == ["status": .string("not_ready")])
            #expect(!publicAnswer.text.contains("acme-rides") && !publicAnswer.text.contains(Self.url))
            let notReady = try await admin.get("/readyz")
            #expect(notReady.status == 503)
            #expect(notReady.json["status"] == .string("not_ready"))
            let provider = try #require(notReady.json["providers"]?.objectValue?["acme-rides"]?.objectValue)
            #expect(provider["state"] == .string("not_ready"))
            #expect(
                provider["reasons"]?.arrayValue?.first?.stringValue?.contains(
                    "session-token keys from \(Self.url) not fetched yet: fetching the JWKS failed: HTTP 500") == true)
            // Liveness is not readiness.
            #expect(try await gateway.get("/healthz").status == 200)

            fetcher.serve(try JWKSet(keys: [JWSKey.generate(.es256, keyID: "idp-1").publicKey()]).publicJSON())
            await keySet.refresh()
            #expect(try await gateway.get("/readyz").json == ["status": .string("ready")])
            let ready = try await admin.get("/readyz")
            #expect(ready.status == 200)
            #expect(ready.json["providers"]?.objectValue?["acme-rides"]?.objectValue?["state"] == .string("ready"))

            // The identity provider goes down again: still ready, serving from the last good keys, and it says so.
            fetcher.fail("HTTP 502")
            await keySet.refresh()
            #expect(try await gateway.get("/readyz").json == ["status": .string("ready")])
            let degraded = try await admin.get("/readyz")
            #expect(degraded.status == 200)
            let state = try #require(degraded.json["providers"]?.objectValue?["acme-rides"]?.objectValue)
            #expect(state["state"] == .string("degraded"))
            #expect(state["reasons"]?.arrayValue?.first?.stringValue?.contains("serving its last good keys") == true)
        }
    }

    @Test func aClientMayLeaveReadinessAlone() async throws {
        let fetcher = SwitchableJWKSFetcher()
        fetcher.fail("HTTP 500")
        try await withGateway(Self.configuration(requiredForReadiness: false), fetcher: fetcher) { gateway in
            try await Self.keySet(gateway).refresh()
            #expect(try await gateway.get("/readyz").status == 200)
        }
    }
}

/// A JWKS endpoint in memory whose answer a test switches.
final class SwitchableJWKSFetcher: JWKSFetcher {
    private let answer = Mutex<Result<[UInt8], Failure>>(.failure(Failure(description: "not set")))

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    func fail(_ reason: String) { answer.withLock { $0 = .failure(Failure(description: reason)) } }
    func serve(_ body: [UInt8]) { answer.withLock { $0 = .success(body) } }

    func fetchJWKS(from url: String) async throws -> [UInt8] { try answer.withLock { $0 }.get() }
}
