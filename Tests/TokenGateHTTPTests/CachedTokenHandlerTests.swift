import AsyncHTTPClient
import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing
import TokenGateCore
import TokenGateTesting

@testable import TokenGateHTTP

/// The event loop's answer to a cached hit, on an `EmbeddedChannel`: what it answers itself (written out, nothing
/// read on), and what it hands on to the router (read on as it came, nothing written, nothing charged).
@Suite struct CachedTokenHandlerTests {
    /// A real token service on the gateway fixture's configuration, its handler on an embedded channel.
    struct Harness {
        let fixture: GatewayFixture
        let service: TokenService
        let channel: EmbeddedChannel

        init(rateLimits: String = "{}") async throws {
            fixture = try GatewayFixture(rateLimits: rateLimits)
            let logger = Logger(label: "tokengate-test", factory: { _ in SwiftLogNoOpLogHandler() })
            let assembler = GatewayAssembler(
                registry: fixture.registry, environment: [:], clock: fixture.clock.gatewayClock, logger: logger,
                jwksFetcher: HTTPJWKSFetcher(client: HTTPClient.shared))
            service = TokenService(generation: try await assembler.build(path: fixture.configPath), clock: fixture.clock.gatewayClock, logger: logger)
            let routes = TokenRoutes(service: service, clock: fixture.clock.gatewayClock)
            channel = EmbeddedChannel(handler: CachedTokenHandler(responder: CachedTokenResponder(routes: routes, serverName: "TokenGate")))
        }

        /// Mints `trip`'s token through the service's full path, as the router would.
        func warm(_ trip: String) async throws -> String {
            let query = TokenQuery(
                providerID: "acme-rides", tokenType: "consumer", parameters: ["tripId": trip], authorization: "Bearer \(GatewayFixture.apiKey)")
            return try await service.token(for: query).token.compact
        }

        func request(_ trip: String, key: String = GatewayFixture.apiKey, extra: HTTPFields = [:]) -> HTTPRequest {
            var fields: HTTPFields = [.authorization: "Bearer \(key)"]
            fields.append(contentsOf: extra)
            return HTTPRequest(method: .get, scheme: nil, authority: "127.0.0.1", path: FastPathTests.trip(trip), headerFields: fields)
        }

        func send(_ request: HTTPRequest, body: String? = nil) throws {
            try channel.writeInbound(HTTPRequestPart.head(request))
            if let body { try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: body))) }
            try channel.writeInbound(HTTPRequestPart.end(nil))
            channel.pipeline.fireChannelReadComplete()
        }

        /// The parts handed on to the router, in order, as `h`, `b`, `e`.
        func handedOn() throws -> String {
            var parts = ""
            while let part = try channel.readInbound(as: HTTPRequestPart.self) {
                switch part {
                case .head: parts += "h"
                case .body: parts += "b"
                case .end: parts += "e"
                }
            }
            return parts
        }

        /// The answer written on the event loop, if any: head and body.
        func answered() throws -> (HTTPResponse, String)? {
            guard case .head(let head)? = try channel.readOutbound(as: HTTPResponsePart.self) else { return nil }
            guard case .body(let body)? = try channel.readOutbound(as: HTTPResponsePart.self),
                case .end? = try channel.readOutbound(as: HTTPResponsePart.self)
            else { throw HarnessError.incompleteAnswer }
            return (head, String(buffer: body))
        }

        /// What the router writes when it has answered a request it was handed.
        func routerAnswers() throws {
            try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
            try channel.writeOutbound(HTTPResponsePart.end(nil))
            while try channel.readOutbound(as: HTTPResponsePart.self) != nil {}
        }
    }

    enum HarnessError: Error { case incompleteAnswer }

    @Test func aCachedHitIsAnsweredOnTheLoopAndNothingReachesTheRouter() async throws {
        let harness = try await Harness()
        let token = try await harness.warm("trip-42")
        try harness.send(harness.request("trip-42"))
        let (head, body) = try #require(try harness.answered())
        #expect(head.status == .ok)
        #expect(head.headerFields[.contentLength] == String(body.utf8.count))
        #expect(head.headerFields[.server] == "TokenGate")
        #expect(body.contains(#""token":"\#(token)""#))
        #expect(try harness.handedOn() == "")
        #expect(harness.fixture.probe.calls == 1)
    }

    /// A miss goes on as it came, and nothing was charged for it: with a burst of one, the router's own check still
    /// lets it through.
    @Test func aMissIsHandedOnUnchargedAndUnminted() async throws {
        let harness = try await Harness(rateLimits: "{ context: { rate: 1/h, burst: 1 } }")
        try harness.send(harness.request("trip-7"))
        #expect(try harness.handedOn() == "he")
        #expect(try harness.answered() == nil)
        #expect(harness.fixture.probe.calls == 0)
        _ = try await harness.warm("trip-7")
    }

    /// Behind a request handed on, a hit waits its turn (handed on too) until the router has answered every one
    /// it was handed.
    @Test func whileTheRouterOwesAnAnswerLaterHitsAreHandedOnInOrder() async throws {
        let harness = try await Harness()
        _ = try await harness.warm("trip-1")
        try harness.send(harness.request("trip-2"))
        try harness.send(harness.request("trip-1"))
        #expect(try harness.handedOn() == "hehe")
        #expect(try harness.answered() == nil)
        // The router answers the first; one is still owed, so the next hit is handed on too (two owed again).
        try harness.routerAnswers()
        try harness.send(harness.request("trip-1"))
        #expect(try harness.handedOn() == "he")
        #expect(try harness.answered() == nil)
        try harness.routerAnswers()
        try harness.routerAnswers()
        try harness.send(harness.request("trip-1"))
        #expect(try harness.answered()?.0.status == .ok)
        #expect(try harness.handedOn() == "")
    }

    @Test func aHitWithABodyAnOriginOrConnectionCloseIsHandedOn() async throws {
        let harness = try await Harness()
        _ = try await harness.warm("trip-1")
        try harness.send(harness.request("trip-1"), body: "x")
        #expect(try harness.handedOn() == "hbe")
        try harness.routerAnswers()
        for extra: HTTPFields in [[.origin: "http://localhost:3000"], [.connection: "close"]] {
            try harness.send(harness.request("trip-1", extra: extra))
            #expect(try harness.handedOn() == "he")
            #expect(try harness.answered() == nil)
            try harness.routerAnswers()
        }
    }

    /// Only the token route's plain path is held; other routes, escapes and dot segments go on at once.
    @Test(arguments: [
        "/healthz", "/v1/providers/acme-rides/jwks.json", "/v1/providers/acme%2Drides/tokens/consumer?tripId=trip-1",
        "/v1/providers/../tokens/consumer", "/v1/providers/acme-rides/tokens/consumer/?tripId=trip-1",
        "/v1/providers/acme-rides/tokens/consumer?tripId=trip-1#x", "/V1/providers/acme-rides/tokens/consumer?tripId=trip-1",
    ])
    func otherTargetsAreHandedOnAtOnce(path: String) async throws {
        let harness = try await Harness()
        _ = try await harness.warm("trip-1")
        let request = HTTPRequest(method: .get, scheme: nil, authority: "127.0.0.1", path: path, headerFields: [:])
        try harness.channel.writeInbound(HTTPRequestPart.head(request))
        #expect(try harness.handedOn() == "h")
    }

    /// A refusal decided on the loop is answered there, once: the router never sees it to count it again.
    @Test func aRefusalOfACachedContextIsAnsweredOnTheLoop() async throws {
        let harness = try await Harness()
        _ = try await harness.warm("trip-1")
        try harness.send(harness.request("trip-1", key: "not-a-key-of-anyone-0123456789"))
        let (head, body) = try #require(try harness.answered())
        #expect(head.status == .unauthorized)
        #expect(body.contains(#""code":"unauthenticated""#))
        #expect(try harness.handedOn() == "")
    }

    @Test func theDateHeaderIsAnIMFFixdate() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(1_795_392_000) == "Mon, 23 Nov 2026 00:00:00 GMT")
    }
}
