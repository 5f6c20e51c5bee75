import Foundation
import Testing
import TokenGateCore
import TokenGateTesting

/// `server.fastPath`: a token request answered from the event loop (a hit at once, a miss when its mint is done)
/// must be the router's answer, in the router's order, charged once. Every other HTTP suite runs through both paths
/// (`scripts/test` runs them again with it off).
@Suite struct FastPathTests {
    static func trip(_ id: String) -> String { "/v1/providers/acme-rides/tokens/consumer?tripId=\(id)" }

    static func get(_ path: String, id: String, key: String? = GatewayFixture.apiKey) -> String {
        let authorization = key.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        return "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-ID: \(id)\r\n\(authorization)\r\n"
    }

    /// The first request mints, the second is a hit: with the clock still, the two answers differ in nothing but
    /// the `Date` the server's clock writes.
    @Test(arguments: [true, false])
    func aHitIsAnsweredByteForByteAsTheRouterAnswersIt(fastPath: Bool) async throws {
        let fixture = try GatewayFixture(server: "{ fastPath: \(fastPath) }")
        try await fixture.withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            var answers: [RawResponse] = []
            for _ in 0..<2 {
                try await connection.send(Self.get(Self.trip("trip-42"), id: "same-id"))
                answers.append(try #require(try await connection.readResponse()))
            }
            #expect(fixture.probe.calls == 1)
            let (minted, hit) = (answers[0], answers[1])
            #expect(minted.status == 200 && hit.status == 200)
            #expect(hit.headers.map(\.0) == ["Content-Type", "Cache-Control", "Content-Length", "X-Request-ID", "Date", "Server"])
            #expect(hit.headers.map(\.0) == minted.headers.map(\.0))
            #expect(hit.headers.filter { $0.0 != "Date" }.map(\.1) == minted.headers.filter { $0.0 != "Date" }.map(\.1))
            #expect(hit.body == minted.body)
            // An error the fast path decides (a wrong key on a cached context) looks like the router's too.
            try await connection.send(Self.get(Self.trip("trip-42"), id: "bad-key", key: "not-a-key-of-anyone-0123456789"))
            let refused = try #require(try await connection.readResponse())
            #expect(refused.status == 401)
            #expect(
                refused.headers.map(\.0) == [
                    "Content-Type", "Cache-Control", "WWW-Authenticate", "Content-Length", "X-Request-ID", "Date", "Server",
                ])
            #expect(refused.text == #"{"error":{"code":"unauthenticated","message":"a valid credential for this provider is required"}}"#)
        }
    }

    /// With limits, a hit's rate-limit fields and a limit's refusal are written by the fast path as the router
    /// writes them: the same fields in the same order, spelled the same, with the same values but the moment's.
    /// (Until this test, a hit's rate-limit fields came before its `Content-Length` on the fast path only.)
    @Test func limitedAnswersAreTheSameThroughBothDoors() async throws {
        func answers(fastPath: Bool) async throws -> [RawResponse] {
            let fixture = try GatewayFixture(rateLimits: "{ context: { rate: 1/h, burst: 2 } }", server: "{ fastPath: \(fastPath) }")
            return try await fixture.withGateway { gateway in
                let connection = try await RawConnection.open(port: gateway.port)
                var answers: [RawResponse] = []
                for index in 0..<3 {
                    try await connection.send(Self.get(Self.trip("trip-42"), id: "limited-\(index)"))
                    answers.append(try #require(try await connection.readResponse()))
                }
                return answers
            }
        }
        let (fast, router) = (try await answers(fastPath: true), try await answers(fastPath: false))
        #expect(fast.map(\.status) == [200, 200, 429])
        #expect(router.map(\.status) == [200, 200, 429])
        #expect(
            fast[1].headers.map(\.0) == [
                "Content-Type", "Cache-Control", "Content-Length", "RateLimit-Policy", "RateLimit", "X-Request-ID", "Date", "Server",
            ])
        #expect(
            fast[2].headers.map(\.0) == [
                "Content-Type", "Cache-Control", "Retry-After", "RateLimit-Policy", "RateLimit", "Content-Length", "X-Request-ID",
                "Date", "Server",
            ])
        // The moment's values: the date, and the seconds until the window resets (one may have ticked between).
        let momentary: Set = ["Date", "RateLimit", "Retry-After"]
        for (viaFastPath, viaRouter) in zip(fast, router) {
            #expect(viaFastPath.headers.map(\.0) == viaRouter.headers.map(\.0))
            #expect(
                viaFastPath.headers.filter { !momentary.contains($0.0) }.map(\.1) == viaRouter.headers.filter { !momentary.contains($0.0) }.map(\.1))
            #expect(viaFastPath.body.count == viaRouter.body.count)
        }
        #expect(fast[2].text == router[2].text)
    }

    /// A miss the fast path takes is signed on the event loop that read it (no hop to another thread and back);
    /// through the router it is signed in the request's task, off the loops.
    @Test(arguments: [true, false])
    func aMissIsSignedOnTheConnectionsEventLoopOnlyByTheFastPath(fastPath: Bool) async throws {
        let fixture = try GatewayFixture(server: "{ fastPath: \(fastPath) }")
        try await fixture.withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            for trip in ["trip-1", "trip-2", "trip-1"] {
                try await connection.send(Self.get(Self.trip(trip), id: trip))
                #expect(try #require(try await connection.readResponse()).status == 200)
            }
        }
        let onLoop = fastPath && ProcessInfo.processInfo.environment["TOKENGATE_TEST_FAST_PATH"] != "off"
        #expect(fixture.probe.signedOnEventLoops == [onLoop, onLoop])
    }

    /// Pipelined on one connection: a hit, a miss whose mint is held back, then hits and another route. Nothing
    /// after the miss may overtake it, though the hits behind it could be answered at once.
    @Test func pipelinedAnswersLeaveInRequestOrderAroundAHeldMint() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            #expect(try await gateway.get(Self.trip("trip-1"), bearer: GatewayFixture.apiKey).status == 200)
            fixture.probe.holdCalls()
            let connection = try await RawConnection.open(port: gateway.port)
            let requests = [
                (Self.trip("trip-1"), "r1"), (Self.trip("trip-2"), "r2"), (Self.trip("trip-1"), "r3"), ("/healthz", "r4"),
                (Self.trip("trip-1"), "r5"),
            ]
            try await connection.send(requests.map { Self.get($0.0, id: $0.1) }.joined())
            let first = try #require(try await connection.readResponse())
            #expect(first.header("X-Request-ID") == "r1")
            #expect(try await eventually { fixture.probe.calls == 2 })
            fixture.probe.releaseCalls()
            var order: [String] = []
            for _ in 0..<4 {
                let response = try #require(try await connection.readResponse())
                #expect(response.status == 200)
                order.append(response.header("X-Request-ID") ?? "none")
            }
            #expect(order == ["r2", "r3", "r4", "r5"])
            // Once the connection has no answer outstanding, hits are answered at once again.
            try await connection.send(Self.get(Self.trip("trip-2"), id: "r6"))
            #expect(try await connection.readResponse()?.header("X-Request-ID") == "r6")
            #expect(fixture.probe.calls == 2)
        }
    }

    /// A miss is charged once by the full path, the hit after it once by the fast path's own check. With a burst
    /// of two, the third request is the first refused.
    @Test(arguments: [true, false])
    func eachRequestIsChargedOnceWhicheverPathAnswersIt(fastPath: Bool) async throws {
        let fixture = try GatewayFixture(rateLimits: "{ context: { rate: 1/h, burst: 2 } }", server: "{ fastPath: \(fastPath) }")
        try await fixture.withGateway { gateway in
            let statuses = try await (0..<3).asyncMap { _ in try await gateway.get(Self.trip("trip-9"), bearer: GatewayFixture.apiKey).status }
            #expect(statuses == [200, 200, 429])
            #expect(fixture.probe.calls == 1)
        }
    }

    /// A client that hangs up while its token is minted costs nothing more: the token is cached, and the next
    /// client gets it on a new connection without a second mint. (Through the router, as `scripts/test`'s third run
    /// has it, the request's task is cancelled with its connection and the mint with it: the next client gets a
    /// token all the same, from a mint of its own.) The request the client pipelined behind it may still be
    /// answered, and minted: the gateway reads a FIN as a half-close (`inputClosed`), after which HTTP answers what
    /// was sent; whether the write of the first answer finds the connection gone before that depends on timing.
    @Test func aClientGoneDuringItsMintLeavesTheTokenCached() async throws {
        let throughTheRouter = ProcessInfo.processInfo.environment["TOKENGATE_TEST_FAST_PATH"] == "off"
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            fixture.probe.holdCalls()
            let leaving = try await RawConnection.open(port: gateway.port)
            try await leaving.send(Self.get(Self.trip("trip-5"), id: "leaving") + Self.get(Self.trip("trip-6"), id: "never-read"))
            #expect(try await eventually { fixture.probe.calls == 1 })
            await leaving.close()
            fixture.probe.releaseCalls()
            let next = try await RawConnection.open(port: gateway.port)
            try await next.send(Self.get(Self.trip("trip-5"), id: "next"))
            let answer = try #require(try await next.readResponse())
            #expect(answer.status == 200 && answer.header("X-Request-ID") == "next")
            if !throughTheRouter { #expect(fixture.probe.calls(for: .trip(ContextID("trip-5")!)) == 1) }
        }
    }

    /// `Connection: close`, a body, or a browser's `Origin` send a hit to the router, which closes the connection,
    /// reads the body, or adds CORS headers as it always does.
    @Test func hitsTheRouterMustShapeAreLeftToIt() async throws {
        let fixture = try GatewayFixture(cors: "{ allowedOrigins: [http://localhost:3000] }")
        try await fixture.withGateway { gateway in
            #expect(try await gateway.get(Self.trip("trip-42"), bearer: GatewayFixture.apiKey).status == 200)
            let browser = try await gateway.get(
                Self.trip("trip-42"), bearer: GatewayFixture.apiKey, headers: [("Origin", "http://localhost:3000")])
            #expect(browser.status == 200)
            #expect(browser.header("Access-Control-Allow-Origin") == "http://localhost:3000")

            let withBody = try await RawConnection.open(port: gateway.port)
            try await withBody.send(
                "GET \(Self.trip("trip-42")) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(GatewayFixture.apiKey)\r\n"
                    + "Content-Length: 4\r\n\r\nbody" + Self.get("/healthz", id: "after-body"))
            #expect(try await withBody.readResponse()?.status == 200)
            #expect(try await withBody.readResponse()?.header("X-Request-ID") == "after-body")

            let closing = try await RawConnection.open(port: gateway.port)
            try await closing.send(
                "GET \(Self.trip("trip-42")) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(GatewayFixture.apiKey)\r\n"
                    + "Connection: close\r\n\r\n")
            let drained = try await closing.drain()
            #expect(drained.closed)
            #expect(String(decoding: drained.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(fixture.probe.calls == 1)
        }
    }
}

extension Sequence {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
