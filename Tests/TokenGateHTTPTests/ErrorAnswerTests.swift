import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// Answers the framework gives before or instead of a route: every one carries the JSON error body, its code's
/// fixed message and an `X-Request-ID`.
@Suite struct ErrorAnswerTests {
    static let token = "/v1/providers/acme-rides/tokens/consumer?tripId=trip-42"

    /// `{"error":{"code":…,"message":…}}` with the code's own message.
    static func expectErrorBody(_ body: [UInt8], code: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let error = (try? JSON.parse(body))?.objectValue?["error"]?.objectValue
        #expect(error?["code"]?.stringValue == code, "\(String(decoding: body, as: UTF8.self))", sourceLocation: sourceLocation)
        let message = TokenGateError.Code.allCases.first { $0.rawValue == code }?.publicMessage
        #expect(message != nil && error?["message"]?.stringValue == message, sourceLocation: sourceLocation)
    }

    @Test(arguments: ["/nothing-here", "/v1/providers", "/v1/providers/acme-rides/tokens", "/healthz/extra"])
    func anUnknownPathIs404NotFound(path: String) async throws {
        try await GatewayFixture().withGateway { gateway in
            let response = try await gateway.get(path + "?probe=<script>", bearer: GatewayFixture.apiKey)
            #expect(response.status == 404)
            #expect(response.header("Content-Type") == "application/json")
            Self.expectErrorBody(response.body, code: "not_found")
            #expect(!response.text.contains("script") && !response.text.contains("nothing-here"))
            #expect(response.header("X-Request-ID") != nil)
        }
    }

    @Test(arguments: [
        ("POST", Self.token, "GET, OPTIONS"), ("PUT", Self.token, "GET, OPTIONS"), ("DELETE", Self.token, "GET, OPTIONS"),
        ("PATCH", Self.token, "GET, OPTIONS"), ("POST", "/healthz", "GET"), ("DELETE", "/readyz", "GET"),
        ("PUT", "/v1/providers/acme-rides/jwks.json", "GET"), ("OPTIONS", "/healthz", "GET"),
    ])
    func anotherMethodOnAKnownPathIs405WithAllow(method: String, path: String, allow: String) async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let response = try await gateway.request(method, path, bearer: GatewayFixture.apiKey)
            #expect(response.status == 405)
            #expect(response.header("Allow") == allow)
            Self.expectErrorBody(response.body, code: "method_not_allowed")
            #expect(response.header("X-Request-ID") != nil)
            #expect(fixture.probe.calls == 0)
        }
    }

    @Test func headIs405WithoutABody() async throws {
        try await GatewayFixture().withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            try await connection.send("HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            // Were a body sent after the HEAD answer, it would be read as the next response and break this one.
            let head = try #require(try await connection.readHeadOnly())
            #expect(head.status == 405 && head.header("Allow") == "GET")
            let next = try #require(try await connection.readResponse())
            #expect(next.status == 200, "\(next.text)")
        }
    }

    @Test func aHeaderPastTheDecoderLimitIs431WithTheJSONBody() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            let padding = String(repeating: "p", count: 40_000)
            try await connection.send("GET \(Self.token) HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: \(padding)\r\n\r\n")
            let response = try #require(try await connection.readResponse())
            #expect(response.status == 431)
            Self.expectErrorBody(response.body, code: "request_header_fields_too_large")
            #expect(response.header("Connection") == "close")
            #expect(response.header("X-Request-ID")?.isEmpty == false)
            #expect(!response.text.contains("ppp"))
            #expect(try await connection.drain().closed)
            #expect(fixture.probe.calls == 0)
        }
    }

    @Test(arguments: [
        ("a header name with a space", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Name: x\r\n\r\n"),
        ("no Host in HTTP/1.1", "GET /healthz HTTP/1.1\r\nAccept: */*\r\n\r\n"),
        ("two Host fields", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n"),
        ("an invalid Host", "GET /healthz HTTP/1.1\r\nHost: a<b>c\r\n\r\n"),
        ("a bad Content-Length", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n"),
        ("no HTTP version", "GET /healthz HTTX/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
    ])
    func aMalformedRequestIs400BadRequestAndTheConnectionCloses(_ name: String, request: String) async throws {
        try await GatewayFixture().withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            try await connection.send(request)
            let response = try #require(try await connection.readResponse(), "\(name): no answer")
            #expect(response.status == 400, "\(name)")
            Self.expectErrorBody(response.body, code: "bad_request")
            #expect(response.header("X-Request-ID")?.isEmpty == false)
            #expect(!response.text.contains("evil") && !response.text.contains("a<b"))
            #expect(try await connection.drain().closed, "\(name)")
        }
    }

    @Test func http10WithoutHostIsServed() async throws {
        try await GatewayFixture().withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            try await connection.send("GET /healthz HTTP/1.0\r\n\r\n")
            let response = try #require(try await connection.readResponse())
            #expect(response.status == 200)
        }
    }

    /// A token request that misses the cache, then on the same connection a request the HTTP layer refuses: the
    /// token comes first, then the refusal (on the fast path the miss is fetched while the refusal waits its turn).
    @Test(arguments: [
        "GARBAGE\r\n\r\n", "GET /healthz HTTP/1.1\r\n\r\n",
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: \(String(repeating: "a", count: 17_000))\r\n\r\n",
    ])
    func aRefusedRequestBehindAMissIsAnsweredAfterTheToken(refused: String) async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            try await connection.send(
                "GET /v1/providers/acme-rides/tokens/consumer?tripId=trip-pipelined HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Authorization: Bearer \(GatewayFixture.apiKey)\r\n\r\n" + refused)
            let first = try #require(try await connection.readResponse())
            #expect(first.status == 200 && first.text.contains("\"token\""), "\(first.status) \(first.text)")
            let second = try #require(try await connection.readResponse())
            #expect([400, 431].contains(second.status))
            #expect(try await connection.drain().closed)
        }
    }

    /// The refusal is answered in order, after the good request before it on the same connection.
    @Test func aMalformedRequestBehindAGoodOneIsAnsweredAfterIt() async throws {
        try await GatewayFixture().withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            try await connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /readyz HTTP/1.1\r\n\r\n")
            let first = try #require(try await connection.readResponse())
            #expect(first.status == 200 && first.text.contains("ok"))
            let second = try #require(try await connection.readResponse())
            #expect(second.status == 400)
            Self.expectErrorBody(second.body, code: "bad_request")
            #expect(try await connection.drain().closed)
        }
    }
}
