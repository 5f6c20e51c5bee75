import AsyncHTTPClient
import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPTypesHTTP1
import Testing
import TokenGateCore
import TokenGateOutbound
import TokenGateTesting

@testable import TokenGateHTTP

/// The event loop's answers to token requests, on a `NIOAsyncTestingChannel`: what it answers itself (written
/// out, nothing read on; a miss once the service's full path has minted), and what it hands on to the router (read
/// on as it came, nothing written, nothing charged).
@Suite struct EventLoopTokenHandlerTests {
    /// A real token service on the gateway fixture's configuration, its handler on a testing channel.
    struct Harness {
        let fixture: GatewayFixture
        let service: TokenService
        let endpoint: TokenEndpoint
        let channel: NIOAsyncTestingChannel

        init(rateLimits: String = "{}") async throws {
            fixture = try GatewayFixture(rateLimits: rateLimits)
            let logger = Logger(label: "tokengate-test", factory: { _ in SwiftLogNoOpLogHandler() })
            let assembler = GatewayAssembler(
                registry: fixture.registry, environment: [:], clock: fixture.clock.gatewayClock, logger: logger,
                jwksFetcher: HTTPJWKSFetcher(client: HTTPClient.shared))
            service = TokenService(generation: try await assembler.build(path: fixture.configPath), clock: fixture.clock.gatewayClock, logger: logger)
            let endpoint = TokenRoutes(service: service, clock: fixture.clock.gatewayClock).endpoint
            self.endpoint = endpoint
            channel = try await NIOAsyncTestingChannel { channel in
                try channel.pipeline.syncOperations.addHandler(EventLoopTokenHandler(endpoint: endpoint, serverName: "TokenGate"))
            }
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

        func send(_ request: HTTPRequest, body: String? = nil) async throws {
            try await channel.writeInbound(HTTPServerRequestPart.head(HTTPRequestHead(request)))
            if let body { try await channel.writeInbound(HTTPServerRequestPart.body(ByteBuffer(string: body))) }
            try await channel.writeInbound(HTTPServerRequestPart.end(nil))
            try await channel.testingEventLoop.executeInContext { channel.pipeline.fireChannelReadComplete() }
            // The end of the loop's turn: the flush queued for it runs.
            await channel.testingEventLoop.run()
        }

        /// The parts handed on to the router, in order, as `h`, `b`, `e`.
        func handedOn() async throws -> String {
            var parts = ""
            while let part = try await channel.readInbound(as: HTTPServerRequestPart.self) {
                switch part {
                case .head: parts += "h"
                case .body: parts += "b"
                case .end: parts += "e"
                }
            }
            return parts
        }

        /// The answer written on the event loop so far, if any: head and body.
        func answered() async throws -> (HTTPResponse, String)? {
            guard case .head(let head)? = try await channel.readOutbound(as: HTTPServerResponsePart.self) else { return nil }
            return try await rest(of: head)
        }

        /// The next answer written on the event loop, waiting for it (a fetch's). Its flush is queued from the
        /// loop's task that writes it, and this loop runs that flush within the same task's turn.
        func nextAnswer() async throws -> (HTTPResponse, String) {
            guard case .head(let head) = try await channel.waitForOutboundWrite(as: HTTPServerResponsePart.self) else {
                throw HarnessError.incompleteAnswer
            }
            return try await rest(of: head)
        }

        /// The head as the router's door would see it (HTTPTypes), with the body.
        private func rest(of head: HTTPResponseHead) async throws -> (HTTPResponse, String) {
            guard case .body(.byteBuffer(let body))? = try await channel.readOutbound(as: HTTPServerResponsePart.self),
                case .end? = try await channel.readOutbound(as: HTTPServerResponsePart.self)
            else { throw HarnessError.incompleteAnswer }
            return (try HTTPResponse(head), String(buffer: body))
        }

        /// What the router writes when it has answered a request it was handed.
        func routerAnswers() async throws {
            try await channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
            try await channel.writeOutbound(HTTPServerResponsePart.end(nil))
            while try await channel.readOutbound(as: HTTPServerResponsePart.self) != nil {}
        }
    }

    enum HarnessError: Error { case incompleteAnswer }

    @Test func aCachedHitIsAnsweredOnTheLoopAndNothingReachesTheRouter() async throws {
        let harness = try await Harness()
        let token = try await harness.warm("trip-42")
        try await harness.send(harness.request("trip-42"))
        let (head, body) = try #require(try await harness.answered())
        #expect(head.status == .ok)
        #expect(head.headerFields[.contentLength] == String(body.utf8.count))
        #expect(head.headerFields[.server] == "TokenGate")
        #expect(body.contains(#""token":"\#(token)""#))
        #expect(try await harness.handedOn() == "")
        #expect(harness.fixture.probe.calls == 1)
    }

    /// Answers leave at the end of the loop's turn: hits read on two connections in one turn are both answered
    /// before either is flushed, then both leave (a client on the same host is woken once for them).
    @Test func answersLeaveTogetherAtTheEndOfTheLoopsTurn() async throws {
        let harness = try await Harness()
        _ = try await harness.warm("trip-1")
        let (beforeTheTurnEnds, afterIt) = try Self.oneTurn(of: harness.request("trip-1"), on: 2, endpoint: harness.endpoint)
        #expect(beforeTheTurnEnds == [nil, nil])
        #expect(afterIt == [.ok, .ok])
        #expect(harness.fixture.probe.calls == 1)
    }

    /// Reads `request` on `connections` connections of one event loop within one turn; returns the status each
    /// had flushed before the turn's end, and after it. Synchronous: an embedded loop stays on its thread.
    static func oneTurn(
        of request: HTTPRequest, on connections: Int, endpoint: TokenEndpoint
    ) throws -> (before: [HTTPResponse.Status?], after: [HTTPResponse.Status?]) {
        let loop = EmbeddedEventLoop()
        let channels = (0..<connections).map { _ in
            EmbeddedChannel(handler: EventLoopTokenHandler(endpoint: endpoint, serverName: "TokenGate"), loop: loop)
        }
        for channel in channels {
            try channel.writeInbound(HTTPServerRequestPart.head(HTTPRequestHead(request)))
            try channel.writeInbound(HTTPServerRequestPart.end(nil))
        }
        func flushed() throws -> [HTTPResponse.Status?] {
            try channels.map { channel in
                guard case .head(let head)? = try channel.readOutbound(as: HTTPServerResponsePart.self) else { return nil }
                return try HTTPResponse(head).status
            }
        }
        let before = try flushed()
        loop.run()
        let after = try flushed()
        for channel in channels { _ = try channel.finish() }
        return (before, after)
    }

    /// A miss is minted by the service's full path and answered from the loop when the token comes: the router
    /// never sees it, and it is charged once (with a burst of one, the next request is refused).
    @Test func aMissIsMintedAndAnsweredWithoutTheRouter() async throws {
        let harness = try await Harness(rateLimits: "{ context: { rate: 1/h, burst: 1 } }")
        try await harness.send(harness.request("trip-7", extra: [.xRequestID: "miss-1"]))
        let (head, body) = try await harness.nextAnswer()
        #expect(head.status == .ok)
        #expect(head.headerFields[.xRequestID] == "miss-1")
        #expect(head.headerFields[.contentLength] == String(body.utf8.count))
        #expect(harness.fixture.probe.calls == 1)
        #expect(try await harness.handedOn() == "")
        try await harness.send(harness.request("trip-7"))
        #expect(try await harness.answered()?.0.status == .tooManyRequests)
    }

    /// Requests read while a mint is under way wait for its answer, then are answered in order; the read the
    /// channel asked for meanwhile is made after.
    @Test func requestsBehindAMintWaitForItsAnswer() async throws {
        let harness = try await Harness()
        _ = try await harness.warm("trip-1")
        harness.fixture.probe.holdCalls()
        try await harness.send(harness.request("trip-2", extra: [.xRequestID: "first"]))
        try await harness.send(harness.request("trip-1", extra: [.xRequestID: "second"]))
        #expect(try await harness.answered() == nil)
        harness.fixture.probe.releaseCalls()
        let (first, _) = try await harness.nextAnswer()
        #expect(first.headerFields[.xRequestID] == "first")
        let (second, _) = try #require(try await harness.answered())
        #expect(second.headerFields[.xRequestID] == "second")
        #expect(try await harness.handedOn() == "")
        #expect(harness.fixture.probe.calls == 2)
    }

    /// Behind a request handed on, a hit waits its turn (handed on too) until the router has answered every one
    /// it was handed.
    @Test func whileTheRouterOwesAnAnswerLaterHitsAreHandedOnInOrder() async throws {
        let harness = try await Harness()
        _ = try await harness.warm("trip-1")
        try await harness.send(harness.request("trip-1"), body: "x")
        try await harness.send(harness.request("trip-1"))
        #expect(try await harness.handedOn() == "hbehe")
        #expect(try await harness.answered() == nil)
        // The router answers the first; one is still owed, so the next hit is handed on too (two owed again).
        try await harness.routerAnswers()
        try await harness.send(harness.request("trip-1"))
        #expect(try await harness.handedOn() == "he")
        #expect(try await harness.answered() == nil)
        try await harness.routerAnswers()
        try await harness.routerAnswers()
        try await harness.send(harness.request("trip-1"))
        #expect(try await harness.answered()?.0.status == .ok)
        #expect(try await harness.handedOn() == "")
    }

    @Test func aHitWithABodyAnOriginOrConnectionCloseIsHandedOn() async throws {
        let harness = try await Harness()
        _ = try await harness.warm("trip-1")
        try await harness.send(harness.request("trip-1"), body: "x")
        #expect(try await harness.handedOn() == "hbe")
        try await harness.routerAnswers()
        for extra: HTTPFields in [[.origin: "http://localhost:3000"], [.connection: "close"]] {
            try await harness.send(harness.request("trip-1", extra: extra))
            #expect(try await harness.handedOn() == "he")
            #expect(try await harness.answered() == nil)
            try await harness.routerAnswers()
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
        try await harness.channel.writeInbound(HTTPServerRequestPart.head(HTTPRequestHead(request)))
        #expect(try await harness.handedOn() == "h")
    }

    /// A refusal decided on the loop is answered there, once: the router never sees it to count it again.
    @Test func aRefusalOfACachedContextIsAnsweredOnTheLoop() async throws {
        let harness = try await Harness()
        _ = try await harness.warm("trip-1")
        try await harness.send(harness.request("trip-1", key: "not-a-key-of-anyone-0123456789"))
        let (head, body) = try #require(try await harness.answered())
        #expect(head.status == .unauthorized)
        #expect(body.contains(#""code":"unauthenticated""#))
        #expect(try await harness.handedOn() == "")
    }

    @Test func theDateHeaderIsAnIMFFixdate() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(1_795_392_000) == "Mon, 23 Nov 2026 00:00:00 GMT")
    }
}
