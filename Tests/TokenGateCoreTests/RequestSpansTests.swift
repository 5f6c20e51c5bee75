import Foundation
import InMemoryTracing
import JOSE
import Logging
import Testing
import TokenGateCoreTesting
import Tracing

@testable import TokenGateCore

/// The spans the full path records, under a span standing for the HTTP request's: which steps, nested how,
/// carrying what; and that a URL's query never reaches an exported attribute.
@Suite struct RequestSpansTests {
    static let apiKey = "tg_spans_key"

    let tracer = InMemoryTracer()
    let service: TokenService

    init() async throws {
        let clock = ManualClock(wallSeconds: 1_700_000_000)
        let logger = Logger(label: "spans") { _ in SwiftLogNoOpLogHandler() }
        let assembler = GatewayAssembler(
            registry: BackendRegistry([SigningTestFactory(failing: ["trip-down"])]), environment: [:], clock: clock.gatewayClock, logger: logger,
            jwksFetcher: ScriptedJWKSFetcher(.failure("none")))
        let yaml = ProviderYAML.config(
            ProviderYAML("acme-rides", backend: .flow("{ type: signing }"), clients: [ProviderYAML.apiKey("app", TestAPIKey(Self.apiKey))]))
        let directory = try TemporaryDirectory(prefix: "spans").path
        let generation = try await assembler.build(
            bytes: Array(yaml.utf8), file: ConfigFile(path: directory + "/config.yaml", environment: [:]), previous: nil)
        service = TokenService(
            generation: generation, formatter: { _ in TokenOnlyFormat() }, clock: clock.gatewayClock, tracer: tracer, logger: logger)
    }

    /// Runs one request under a server span, as the HTTP face does; returns that span's ID and every span ended.
    func request(trip: String, apiKey: String = apiKey) async -> (server: String, spans: [String: FinishedInMemorySpan]) {
        tracer.clearAll()
        let server = tracer.startSpan("GET /v1/providers/{providerId}/tokens/{tokenType}", ofKind: .server)
        _ = await ServiceContext.$current.withValue(server.context) {
            try? await service.token(
                for: TokenQuery(providerID: "acme-rides", tokenType: "consumer", parameters: ["tripId": trip], authorization: "Bearer \(apiKey)"))
        }
        server.end()
        let spans = tracer.finishedSpans.filter { $0.kind == .internal }
        #expect(Set(spans.map(\.operationName)).count == spans.count, "one span per step")
        return (server.spanContext.spanID, Dictionary(uniqueKeysWithValues: spans.map { ($0.operationName, $0) }))
    }

    func string(_ span: FinishedInMemorySpan?, _ key: String) -> String? {
        guard case .string(let value)? = span?.attributes.get(key) else { return nil }
        return value
    }

    @Test func aMissIsAuthenticationThenTheCacheAroundTheBackendAndTheVerification() async throws {
        let (server, spans) = await request(trip: "trip-1")
        #expect(Set(spans.keys) == ["tokengate.authenticate", "tokengate.cache", "tokengate.backend", "tokengate.verify"])
        let cache = try #require(spans["tokengate.cache"])
        #expect(spans["tokengate.authenticate"]?.parentSpanID == server)
        #expect(cache.parentSpanID == server)
        // The fetch runs in a task of its own (one per context, shared by concurrent callers), inside the cache's span.
        #expect(spans["tokengate.backend"]?.parentSpanID == cache.spanID)
        #expect(spans["tokengate.verify"]?.parentSpanID == cache.spanID)
        #expect(string(cache, "tokengate.cache.outcome") == "miss")
        #expect(string(spans["tokengate.backend"], "tokengate.backend") == "signing")
        for span in spans.values {
            #expect(string(span, "tokengate.provider") == "acme-rides")
            #expect(string(span, "tokengate.token_type") == "consumer")
            #expect(span.status == nil)
        }
    }

    @Test func aHitIsAuthenticationAndTheCacheOnly() async throws {
        _ = await request(trip: "trip-1")
        let (_, spans) = await request(trip: "trip-1")
        #expect(Set(spans.keys) == ["tokengate.authenticate", "tokengate.cache"])
        #expect(string(spans["tokengate.cache"], "tokengate.cache.outcome") == "hit")
    }

    @Test func aRefusalEndsTheAuthenticationSpanWithItsCodeAndNothingElseRuns() async throws {
        let (_, spans) = await request(trip: "trip-1", apiKey: "tg_wrong")
        #expect(Set(spans.keys) == ["tokengate.authenticate"])
        let span = try #require(spans["tokengate.authenticate"])
        #expect(span.status?.code == .error)
        #expect(string(span, "tokengate.error.code") == "unauthenticated")
        // Before admission nothing about the request is trusted, so the provider is not named.
        #expect(string(span, "tokengate.provider") == nil)
    }

    @Test func aFailingBackendIsCodedNotDescribed() async throws {
        let (_, spans) = await request(trip: "trip-down")
        let backend = try #require(spans["tokengate.backend"])
        #expect(backend.status?.code == .error)
        #expect(string(backend, "tokengate.error.code") == "backend_unavailable")
        #expect(string(spans["tokengate.cache"], "tokengate.error.code") == "backend_unavailable")
        #expect(spans["tokengate.verify"] == nil)
        // The backend's own words (a host name here) stay in the logs.
        var exported: [String] = []
        for span in spans.values {
            exported.append(span.status?.message ?? "")
            exported += span.errors.map { String(describing: $0.error) }
            // swift-format-ignore: ReplaceForEachWithForLoop
            // SpanAttributes is not a Sequence: forEach is its only walk.
            span.attributes.forEach { _, value in exported.append(String(describing: value)) }
        }
        #expect(!exported.contains { $0.contains("token-server.internal") }, "\(exported)")
    }

    @Test func noURLQueryOrErrorReasonReachesASpan() throws {
        let base = InMemoryTracer()
        let tracer = RedactingTracer(base)
        let span = tracer.startSpan("GET", ofKind: .client)
        span.updateAttributes { attributes in
            attributes["url.full"] = "https://tokens.acme.example/v1/token?trip=t-1&key=sk_live_123#frag"
            attributes["url.query"] = "trip=t-1&key=sk_live_123"
            attributes["url.path"] = "/v1/token"
        }
        span.attributes["url.full"] = "http://127.0.0.1:8080/jwks?key=sk_live_456"
        span.end()
        let finished = try #require(base.finishedSpans.first)
        #expect(string(finished, "url.full") == "http://127.0.0.1:8080/jwks")
        #expect(finished.attributes.get("url.query") == nil)
        #expect(string(finished, "url.path") == "/v1/token")
        #expect(finished.kind == .client)

        // A recorded error is its code and the callers' fixed sentence, or its type: never its reason.
        let failed = tracer.startSpan("GET /v1/providers/{providerId}/tokens/{tokenType}", ofKind: .server)
        failed.recordError(TokenGateError(.forbidden, "the credential belongs to another provider (acme-other)"))
        failed.recordError(CocoaError(.fileReadNoPermission, userInfo: [NSFilePathErrorKey: "/etc/tokengate/keys/acme.json"]))
        failed.end()
        let errors = try #require(base.finishedSpans.last?.errors.map { String(describing: $0.error) })
        #expect(errors == ["forbidden: \(TokenGateError.Code.forbidden.publicMessage)", "CocoaError"])

        // Propagation goes through unchanged: a child continues the trace, and inject writes its context.
        let parent = tracer.startSpan("parent")
        let child = tracer.startSpan("child", context: parent.context)
        var headers: [String: String] = [:]
        tracer.inject(child.context, into: &headers, using: DictionaryInjector())
        #expect(base.performedContextInjections.count == 1)
        #expect(child.context.inMemorySpanContext?.parentSpanID == parent.context.inMemorySpanContext?.spanID)
    }
}

private struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}
