import Foundation
import JOSE
import Logging
import StaticKeySigner
import Synchronization
import Testing
import TokenGateCore
import TokenGateTesting

/// One tenant that cannot serve never takes the process out of service: `/readyz` stays 200 on both listeners while
/// the healthy tenant serves, and the broken tenant is named where operators look (the admin details with since
/// when, its own route, its gauge, the log). What does make the process unready: a required provider, no provider
/// able to serve, and a start still waiting for first answers.
@Suite(.timeLimit(.minutes(5))) struct TenantReadinessTests {
    static let healthyKey = "acme-backend-key-0123456789"
    static let jwksURL = "https://login.beta.test/jwks.json"

    /// Two tenants: `acme-rides` (static keys, an API-key client: ready once built) and `beta-fleet`, whose riders'
    /// session tokens are verified with keys from `jwksURL` (not ready until they arrive). `server` is the body of a
    /// `server:` section.
    static func configuration(server: String? = nil) -> String {
        ProviderYAML.config(
            preamble: server.map { "server: \($0)\n" } ?? "",
            ProviderYAML(
                "acme-rides", backend: .staticKey(["consumer"], file: "keys/acme.json"),
                clients: [ProviderYAML.apiKey("dispatch", TestAPIKey(healthyKey))]),
            ProviderYAML(
                "beta-fleet", backend: .staticKey(["consumer"], file: "keys/beta.json"),
                clients: [riderApp(audience: "beta-rider-app")]))
    }

    /// A session-JWT client whose keys come from `jwksURL`.
    static func riderApp(audience: String) -> String {
        "{ name: rider-app, type: jwt, jwksUrl: \(jwksURL), issuer: https://login.beta.test/, audience: \(audience), allow: { consumer: { claim: trips } } }"
    }

    func withGateway(
        server: String? = nil, fetcher: any JWKSFetcher, clock: ManualClock = ManualClock(), logs: LogRecorder? = nil,
        _ body: (RunningGateway) async throws -> Void
    ) async throws {
        try await TemporaryDirectory.with { directory in
            let path = try directory.write("config.yaml", Self.configuration(server: server))
            if let logs {
                try await RunningGateway.with(
                    configuration: path, registry: BackendRegistry([StaticKeySignerFactory()]), clock: clock.gatewayClock,
                    logger: logs.logger, jwksFetcher: fetcher, body)
            } else {
                try await RunningGateway.with(
                    configuration: path, registry: BackendRegistry([StaticKeySignerFactory()]), clock: clock.gatewayClock,
                    jwksFetcher: fetcher, body)
            }
        }
    }

    static func keySet(_ gateway: RunningGateway) throws -> RemoteKeySet {
        try #require(gateway.service.generation.keySets.keySets[jwksURL])
    }

    static func providers(_ answer: GatewayResponse) -> JSONObject { answer.json["providers"]?.objectValue ?? [:] }

    /// `2027-01-15T10:23:00Z`, by Foundation's formatter rather than the gateway's.
    static func rfc3339(_ seconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    @Test func oneTenantNotReadyLeavesTheProcessReadyAndIsNamedWhereOperatorsLook() async throws {
        let fetcher = SwitchableJWKSFetcher()
        fetcher.fail("HTTP 503")
        let logs = LogRecorder()
        let clock = ManualClock()
        try await withGateway(fetcher: fetcher, clock: clock, logs: logs) { gateway in
            try await Self.keySet(gateway).refresh()
            let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)

            // Both listeners: ready, for the tenant that can serve.
            let publicAnswer = try await gateway.get("/readyz")
            #expect(publicAnswer.status == 200)
            #expect(publicAnswer.json == ["status": .string("ready")])
            let details = try await admin.get("/readyz")
            #expect(details.status == 200)
            #expect(details.json["status"] == .string("ready"))
            #expect(details.json["reasons"] == nil)
            let beta = try #require(Self.providers(details)["beta-fleet"]?.objectValue)
            #expect(beta["state"] == .string("not_ready"))
            #expect(beta["since"] == .string(Self.rfc3339(clock.now)))
            #expect(
                beta["reasons"]?.arrayValue?.first?.stringValue
                    == "session-token keys from \(Self.jwksURL) not fetched yet: fetching the JWKS failed: HTTP 503")
            #expect(Self.providers(details)["acme-rides"]?.objectValue?["state"] == .string("ready"))

            // The healthy tenant serves meanwhile.
            let token = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-1", bearer: Self.healthyKey)
            #expect(token.status == 200)

            // Its own route, for an orchestrator that follows one tenant; an unknown one is 404.
            let betaRoute = try await admin.get("/readyz/providers/beta-fleet")
            #expect(betaRoute.status == 503)
            #expect(betaRoute.json["provider"] == .string("beta-fleet"))
            #expect(betaRoute.json["state"] == .string("not_ready"))
            #expect(try await admin.get("/readyz/providers/acme-rides").status == 200)
            let unknown = try await admin.get("/readyz/providers/nobody-here")
            #expect(unknown.status == 404)
            #expect(unknown.errorCode == "unknown_provider")
            // Not on the public listener: it names a tenant.
            #expect(try await gateway.get("/readyz/providers/beta-fleet").status == 404)

            // Its gauge (and the process's), and one line in the log.
            let metrics = try await gateway.metrics()
            #expect(metrics.contains(#"tokengate_provider_ready{provider="beta-fleet"} 0"#))
            #expect(metrics.contains(#"tokengate_provider_ready{provider="acme-rides"} 1"#))
            #expect(metrics.contains("tokengate_ready 1"))
            let changed = logs.all.filter { $0.message == "provider readiness changed" && $0.metadata["provider"] == "beta-fleet" }
            #expect(changed.last?.metadata["state"] == "not_ready")
            #expect(changed.last?.level == .warning)

            // It recovers by itself; its since moves to when it did.
            clock.advance(by: .seconds(90))
            fetcher.serve(try JWKSet(keys: [JWSKey.generate(.es256, keyID: "idp-1").publicKey()]).publicJSON())
            try await Self.keySet(gateway).refresh()
            let recovered = try #require(Self.providers(try await admin.get("/readyz"))["beta-fleet"]?.objectValue)
            #expect(recovered["state"] == .string("ready"))
            #expect(recovered["since"] == .string(Self.rfc3339(clock.now)))
            #expect(try await gateway.metrics().contains(#"tokengate_provider_ready{provider="beta-fleet"} 1"#))
        }
    }

    @Test func aRequiredProviderGatesTheProcess() async throws {
        let fetcher = SwitchableJWKSFetcher()
        fetcher.fail("HTTP 503")
        try await withGateway(server: "{ readiness: { requireProviders: [beta-fleet] } }", fetcher: fetcher) { gateway in
            try await Self.keySet(gateway).refresh()
            let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
            #expect(try await gateway.get("/readyz").status == 503)
            let details = try await admin.get("/readyz")
            #expect(details.status == 503)
            #expect(details.json["reasons"] == .array(["required provider beta-fleet is not_ready"]))
            #expect(Self.providers(details)["beta-fleet"]?.objectValue?["required"] == .bool(true))
            #expect(try await gateway.metrics().contains("tokengate_ready 0"))

            fetcher.serve(try JWKSet(keys: [JWSKey.generate(.es256, keyID: "idp-1").publicKey()]).publicJSON())
            try await Self.keySet(gateway).refresh()
            #expect(try await gateway.get("/readyz").status == 200)
        }
    }

    @Test func noProviderAbleToServeMakesTheProcessUnready() async throws {
        let fetcher = SwitchableJWKSFetcher()
        fetcher.fail("HTTP 503")
        // Two tenants whose callers' keys both come from one identity provider that is down.
        try await TemporaryDirectory.with { directory in
            let path = try directory.write(
                "config.yaml",
                ProviderYAML.config(
                    ProviderYAML("beta-fleet", backend: .staticKey(["consumer"], file: "keys/beta.json"), clients: [Self.riderApp(audience: "a")]),
                    ProviderYAML("gamma-fleet", backend: .staticKey(["consumer"], file: "keys/gamma.json"), clients: [Self.riderApp(audience: "b")])))
            try await RunningGateway.with(
                configuration: path, registry: BackendRegistry([StaticKeySignerFactory()]), clock: ManualClock().gatewayClock,
                jwksFetcher: fetcher
            ) { gateway in
                try await Self.keySet(gateway).refresh()
                #expect(try await gateway.get("/readyz").status == 503)
                let details = try await RunningGateway.Endpoint(baseURL: gateway.adminURL).get("/readyz")
                #expect(details.status == 503)
                #expect(details.json["reasons"] == .array(["no provider can serve"]))
            }
        }
    }

    @Test func aStartWaitsForFirstAnswersUpToItsTimeout() async throws {
        let fetcher = HeldJWKSFetcher()
        let clock = ManualClock()
        try await withGateway(server: "{ readiness: { startTimeout: 20s } }", fetcher: fetcher, clock: clock) { gateway in
            // beta-fleet's first fetch is under way and has not failed: the replica does not take traffic yet.
            #expect(try await eventually { fetcher.waiting > 0 })
            let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
            let starting = try await admin.get("/readyz")
            #expect(starting.status == 503)
            #expect(starting.json["reasons"] == .array(["starting: waiting for the first answers of beta-fleet"]))
            #expect(Self.providers(starting)["beta-fleet"]?.objectValue?["state"] == .string("starting"))
            #expect(try await gateway.get("/readyz").status == 503)

            // Past the start timeout, the tenants that can serve are served without it.
            clock.advance(by: .seconds(21))
            #expect(try await gateway.get("/readyz").status == 200)
            let later = try await admin.get("/readyz")
            #expect(Self.providers(later)["beta-fleet"]?.objectValue?["state"] == .string("starting"))
            fetcher.release()
        }
    }

    @Test func aStartDoesNotWaitForAFirstAnswerThatFailed() async throws {
        let fetcher = SwitchableJWKSFetcher()
        fetcher.fail("HTTP 503")
        try await withGateway(server: "{ readiness: { startTimeout: 10m } }", fetcher: fetcher) { gateway in
            try await Self.keySet(gateway).refresh()
            #expect(try await gateway.get("/readyz").status == 200)
        }
    }
}

/// A JWKS endpoint that never answers until released: a first fetch under way.
final class HeldJWKSFetcher: JWKSFetcher {
    private let state = Mutex<(released: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Fetches waiting now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Lets every waiting fetch (and every later one) fail.
    func release() {
        let waiters = state.withLock { state in
            state.released = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func fetchJWKS(from url: String) async throws -> [UInt8] {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if state.released { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
        throw SwitchableJWKSFetcher.Failure(description: "released")
    }
}
