import AsyncHTTPClient
import Foundation
import JOSE
import NIOCore
import NIOHTTP1
import OutboundHTTP
import Testing
import TokenGateCore
import TokenGateTesting
import UpstreamTokenServer

/// One tenant's token server hangs, then fails, then recovers, while another tenant's traffic runs on the same
/// gateway: the other tenant's latency and error rate are measured against a baseline taken in the same run without
/// the fault, the sick tenant answers promptly with the documented codes, and it recovers by itself.
@Suite struct TenantIsolationTests {
    static let apiKey = "dispatch-key-0123456789"

    /// What one request got, and how long it took.
    struct Sample: Sendable {
        var status: Int
        var code: String?
        var retryAfter: String?
        var seconds: Double
    }

    /// `workers` loops of requests for `duration`, each pausing `pause` after an answer (callers, not a CPU flood:
    /// the gateway's CPU is shared by design, and rate limits are what bound a tenant's share), through a client of
    /// their own (so one tenant's held connections never queue the other's requests in the test's own pool). Worker
    /// `w`'s request `i` asks for trip `prefix-w-(i % 10)`: ten misses each, then hits, as riders come back.
    static func load(
        _ client: HTTPClient, _ baseURL: String, provider: String, prefix: String, workers: Int, duration: Duration,
        pause: Duration = .milliseconds(5)
    ) async throws -> [Sample] {
        let deadline = ContinuousClock.now + duration
        return try await withThrowingTaskGroup(of: [Sample].self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var samples: [Sample] = []
                    var index = 0
                    while ContinuousClock.now < deadline {
                        var request = HTTPClientRequest(
                            url: "\(baseURL)/v1/providers/\(provider)/tokens/consumer?tripId=\(prefix)-\(worker)-\(index % 10)")
                        request.headers.add(name: "Authorization", value: "Bearer \(apiKey)")
                        let started = ContinuousClock.now
                        let response = try await client.execute(request, timeout: .seconds(30))
                        let body = try await response.body.collect(upTo: 1 << 16)
                        let elapsed = ContinuousClock.now - started
                        var code: String?
                        if case .object(let object)? = try? JSON.parse(Array(buffer: body)) {
                            code = object["error"]?.objectValue?["code"]?.stringValue
                        }
                        samples.append(
                            Sample(
                                status: Int(response.status.code), code: code, retryAfter: response.headers.first(name: "Retry-After"),
                                seconds: Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds)))
                        index += 1
                        try await Task.sleep(for: pause)
                    }
                    return samples
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }

    static func percentile(_ samples: [Sample], _ fraction: Double) -> Double {
        let sorted = samples.map(\.seconds).sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    }

    static func errorRate(_ samples: [Sample]) -> Double {
        samples.isEmpty ? 1 : Double(samples.filter { $0.status != 200 }.count) / Double(samples.count)
    }

    /// A token server that mints a token for whichever trip it is asked about, signed by `key` for `account`.
    static func minting(_ key: JWSKey, account: String) -> ScriptedUpstream.Action {
        .answer { request in
            let trip = request.uri.split(separator: "trip=").last.map(String.init) ?? ""
            guard let id = ContextID(trip) else { return .respond(status: 400) }
            let claims = FleetEngineClaims.claims(
                serviceAccount: account, audience: FleetEngineClaims.defaultAudience, context: .trip(id),
                issuedAt: Int64(Date().timeIntervalSince1970), lifetime: 3600)
            guard let token = try? JWSSigner(key: key).sign(claims: claims) else { return .respond(status: 500) }
            return .json(#"{"token":"\#(token)"}"#)
        }
    }

    /// `guardSettings`: lines of the core's `backend:` keys.
    static func provider(_ id: String, _ upstream: ScriptedUpstream, guardSettings: [String] = []) -> ProviderYAML {
        let backend = """
            backend:
              type: upstream-http
            \(guardSettings.map { "  \($0)\n" }.joined())\
              url: \(upstream.baseURL)/token?trip={tripId}
              tokenTypes: [consumer]
              timeouts: { connect: 300ms, total: 600ms }
              retries: { maxAttempts: 2, initialBackoff: 10ms, maxBackoff: 20ms }
              verify:
                - jwksUrl: \(upstream.baseURL)/jwks
                  serviceAccount: \(UpstreamFixture.serviceAccount)
            """
        return ProviderYAML(id, backend: .yaml(backend), clients: [ProviderYAML.apiKey("dispatch", TestAPIKey(apiKey))])
    }

    @Test func aHangingThenFailingUpstreamStaysWithItsTenant() async throws {
        let key = TestKeys.signer.key
        let jwks = String(decoding: try JWKSet(keys: [key.publicKey()]).publicJSON(), as: UTF8.self)
        let sick = try await ScriptedUpstream.start()
        let healthy = try await ScriptedUpstream.start()
        let backendClient = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: OutboundExchange.clientConfiguration())
        var poolConfiguration = HTTPClient.Configuration()
        poolConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        let sickCallers = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: poolConfiguration)
        let healthyCallers = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: poolConfiguration)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for upstream in [sick, healthy] {
            upstream.script("/jwks", [.json(jwks)])
            upstream.script("/token", [Self.minting(key, account: UpstreamFixture.serviceAccount)])
        }
        let path = try directory.write(
            "config.yaml",
            ProviderYAML.config(
                Self.provider(
                    "acme-rides", sick,
                    guardSettings: ["maxConcurrentCalls: 4", "queueTimeout: 200ms", "circuitBreaker: { consecutiveFailures: 5, openFor: 60s }"]),
                Self.provider("beta-cabs", healthy)))
        let registry = BackendRegistry([UpstreamTokenServerFactory(httpClient: backendClient)])
        do {
            // Real time, except that the test moves monotonic time on to end the circuit's open minute: the phases
            // below then hold on a loaded machine however long each takes.
            let skip = Locked<UInt64>(0)
            let system = TokenGateClock.system
            let clock = TokenGateClock(
                wallSeconds: system.wallSeconds, monotonicNanoseconds: { system.monotonicNanoseconds() + skip.withLock { $0 } })
            try await RunningGateway.with(configuration: path, registry: registry, clock: clock) { gateway in
                let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
                #expect(try await eventually { try await admin.get("/readyz").status == 200 })
                let phase = Duration.seconds(2)

                // Baseline: the healthy tenant alone, then both tenants healthy.
                let baseline = try await Self.load(
                    healthyCallers, gateway.baseURL, provider: "beta-cabs", prefix: "base", workers: 4, duration: phase)

                // The sick tenant's token server stops answering, under a flood of distinct trips.
                sick.script("/token", [.neverAnswer])
                async let flood = Self.load(
                    sickCallers, gateway.baseURL, provider: "acme-rides", prefix: "hang", workers: 16, duration: phase, pause: .milliseconds(25))
                let during = try await Self.load(
                    healthyCallers, gateway.baseURL, provider: "beta-cabs", prefix: "fault", workers: 4, duration: phase)
                let hung = try await flood

                // The healthy tenant: every request served, p99 within a bound of its own baseline.
                let (baseP99, faultP99) = (Self.percentile(baseline, 0.99), Self.percentile(during, 0.99))
                print(
                    "isolation: beta-cabs p99 \(Int(baseP99 * 1000)) ms alone, \(Int(faultP99 * 1000)) ms beside the hanging tenant; "
                        + "\(baseline.count) and \(during.count) requests; "
                        + "acme-rides \(hung.count) answers, slowest \(Int((hung.map(\.seconds).max() ?? 0) * 1000)) ms")
                #expect(Self.errorRate(baseline) == 0)
                #expect(Self.errorRate(during) == 0, "\(during.filter { $0.status != 200 }.prefix(3))")
                #expect(faultP99 <= 3 * baseP99 + 0.25 * Double(TestTiming.slowdown), "p99 \(faultP99) s against \(baseP99) s alone")

                // The sick tenant: only the documented codes, never held past its timeout and queue wait. Its flood of
                // new trips also meets its own mint budget (backend.mintBudget): 429, with when to come back.
                let documented = [504: "backend_timeout", 503: "backend_unavailable", 429: "rate_limited"]
                #expect(!hung.isEmpty)
                #expect(hung.allSatisfy { documented[$0.status] != nil }, "\(Set(hung.map(\.status)))")
                let answered = Set(hung.map { "\($0.status) \($0.code ?? "-")" })
                #expect(hung.allSatisfy { documented[$0.status] == $0.code }, "\(answered)")
                #expect(hung.filter { [503, 429].contains($0.status) }.allSatisfy { $0.retryAfter != nil })
                #expect((hung.map(\.seconds).max() ?? 0) < 3 * Double(TestTiming.slowdown))

                // The circuit opened: refusals at once, reported in metrics and readiness.
                let scrape = MetricsScrape(try await gateway.metrics())
                #expect(scrape["tokengate_circuit_state", ["provider": "acme-rides", "call": "backend", "token_type": "consumer"]] == 2)
                #expect(scrape["tokengate_circuit_state", ["provider": "beta-cabs", "call": "backend", "token_type": "consumer"]] == 0)
                let refusals = ["provider": "acme-rides", "call": "backend", "token_type": "consumer", "reason": "circuit_open"]
                #expect((scrape["tokengate_backend_refusals_total", refusals] ?? 0) > 0)
                let degraded = try await admin.get("/readyz")
                let acme = try #require(degraded.json["providers"]?.objectValue?["acme-rides"]?.objectValue)
                #expect(acme["state"] == .string("degraded"))
                #expect(acme["reasons"]?.arrayValue?.first?.stringValue?.hasPrefix("circuit_open: backend calls for consumer tokens refused") == true)
                #expect(degraded.json["providers"]?.objectValue?["beta-cabs"]?.objectValue?["state"] == .string("ready"))

                // Now it fails outright: while the circuit is open each answer is prompt, 503 with Retry-After, and the
                // upstream is left alone.
                sick.script("/token", [.respond(status: 503)])
                let callsBefore = sick.calls(to: "/token")
                for index in 0..<5 {
                    let started = ContinuousClock.now
                    let answer = try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=fail-\(index)", bearer: Self.apiKey)
                    #expect(answer.status == 503 && answer.errorCode == "backend_unavailable")
                    #expect(answer.header("Retry-After").flatMap(Int.init).map { (1...60).contains($0) } == true)
                    #expect(ContinuousClock.now - started < TestTiming.bound(.seconds(1)))
                }
                #expect(sick.calls(to: "/token") == callsBefore)

                // It recovers by itself: once openFor has passed, the next request is the probe; it succeeds and closes
                // the circuit.
                sick.script("/token", [Self.minting(key, account: UpstreamFixture.serviceAccount)])
                skip.withLock { $0 += 60_000_000_000 }
                #expect(
                    try await eventually(within: TestTiming.bound(.seconds(10))) {
                        try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=after-1", bearer: Self.apiKey).status == 200
                    })
                let recovered = MetricsScrape(try await gateway.metrics())
                #expect(recovered["tokengate_circuit_state", ["provider": "acme-rides", "call": "backend", "token_type": "consumer"]] == 0)
                #expect(try await admin.get("/readyz").json["providers"]?.objectValue?["acme-rides"]?.objectValue?["state"] == .string("ready"))
            }
        } catch {
            try? await shutdown(backendClient, sickCallers, healthyCallers, sick, healthy)
            throw error
        }
        try await shutdown(backendClient, sickCallers, healthyCallers, sick, healthy)
    }

    private func shutdown(_ a: HTTPClient, _ b: HTTPClient, _ c: HTTPClient, _ sick: ScriptedUpstream, _ healthy: ScriptedUpstream) async throws {
        for client in [a, b, c] { try await client.shutdown() }
        await sick.stop()
        await healthy.stop()
    }
}
