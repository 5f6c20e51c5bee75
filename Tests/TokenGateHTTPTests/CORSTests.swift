import Testing
import TokenGateCore
import TokenGateTesting

@Suite struct CORSTests {
    static let token = "/v1/providers/acme-rides/tokens/consumer?tripId=trip-42"
    static let listed = "https://ops.acme.example"
    static let fixtureCORS = "{ allowedOrigins: [HTTPS://Ops.Acme.Example:443, http://localhost:3000], maxAge: 15m }"
    static let corsHeaders = [
        "Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Access-Control-Allow-Methods",
        "Access-Control-Allow-Headers", "Access-Control-Expose-Headers", "Access-Control-Max-Age", "Vary",
    ]

    static func preflight(from origin: String, to path: String = token) -> [(String, String)] {
        [("Origin", origin), ("Access-Control-Request-Method", "GET"), ("Access-Control-Request-Headers", "authorization")]
    }

    @Test(arguments: [(listed, GatewayFixture.apiKey, 200), ("http://localhost:3000", nil, 401)])
    func aListedOriginCanReadAnswersAndErrors(origin: String, key: String?, status: Int) async throws {
        try await GatewayFixture(cors: Self.fixtureCORS).withGateway { gateway in
            let response = try await gateway.get(Self.token, bearer: key, headers: [("Origin", origin)])
            #expect(response.status == status)
            #expect(response.header("Access-Control-Allow-Origin") == origin)
            #expect(response.header("Vary") == "Origin")
            #expect(response.header("Access-Control-Expose-Headers") == "Retry-After, X-Request-ID, RateLimit-Policy, RateLimit")
            #expect(response.header("Access-Control-Allow-Credentials") == nil)
        }
    }

    @Test(arguments: ["https://evil.example", "https://ops.acme.example.evil.example", "http://ops.acme.example", "null"])
    func anOriginNotListedGetsNoCORSHeaders(origin: String) async throws {
        try await GatewayFixture(cors: Self.fixtureCORS).withGateway { gateway in
            let response = try await gateway.get(Self.token, bearer: GatewayFixture.apiKey, headers: [("Origin", origin)])
            #expect(response.status == 200)
            for name in Self.corsHeaders { #expect(response.header(name) == nil, "\(name)") }
        }
    }

    @Test func aPreflightFromAListedOriginIs204WithWhatThePageMayDo() async throws {
        let fixture = try GatewayFixture(cors: Self.fixtureCORS)
        try await fixture.withGateway { gateway in
            let response = try await gateway.request("OPTIONS", Self.token, headers: Self.preflight(from: Self.listed))
            #expect(response.status == 204)
            #expect(response.header("Access-Control-Allow-Origin") == Self.listed)
            #expect(response.header("Access-Control-Allow-Methods") == "GET")
            #expect(response.header("Access-Control-Allow-Headers") == "Authorization, X-Request-ID")
            #expect(response.header("Access-Control-Max-Age") == "900")
            #expect(response.header("Vary") == "Origin")
            #expect(response.header("Access-Control-Allow-Credentials") == nil)
            #expect(response.header("X-Request-ID") != nil)
            #expect(response.body.isEmpty)
            #expect(fixture.probe.calls == 0)
        }
    }

    @Test(arguments: [
        ("https://evil.example", "/v1/providers/acme-rides/tokens/consumer"),
        ("http://localhost:3001", "/v1/providers/acme-rides/tokens/driver"),
        (listed, "/v1/providers/other-fleet/tokens/consumer"),
        (listed, "/v1/providers/nobody-here/tokens/consumer"),
    ])
    func aPreflightFromAnOriginNotListedIs403WithoutCORSHeaders(origin: String, path: String) async throws {
        try await GatewayFixture(cors: Self.fixtureCORS).withGateway { gateway in
            let response = try await gateway.request("OPTIONS", path, headers: Self.preflight(from: origin))
            #expect(response.status == 403)
            ErrorAnswerTests.expectErrorBody(response.body, code: "origin_not_allowed")
            for name in Self.corsHeaders { #expect(response.header(name) == nil, "\(name)") }
        }
    }

    @Test func anOptionsRequestThatIsNoPreflightLearnsTheMethods() async throws {
        try await GatewayFixture(cors: Self.fixtureCORS).withGateway { gateway in
            let response = try await gateway.request("OPTIONS", Self.token)
            #expect(response.status == 204)
            #expect(response.header("Allow") == "GET, OPTIONS")
            #expect(response.header("Access-Control-Allow-Origin") == nil)
        }
    }

    @Test func aProviderWithoutCORSNeverSendsCORSHeaders() async throws {
        try await GatewayFixture().withGateway { gateway in
            let response = try await gateway.get(Self.token, bearer: GatewayFixture.apiKey, headers: [("Origin", Self.listed)])
            #expect(response.status == 200)
            #expect(response.header("Access-Control-Allow-Origin") == nil)
            let preflight = try await gateway.request("OPTIONS", Self.token, headers: Self.preflight(from: Self.listed))
            #expect(preflight.status == 403)
        }
    }
}
