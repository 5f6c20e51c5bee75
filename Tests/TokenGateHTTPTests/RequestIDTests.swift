import Testing
import TokenGateCore
import TokenGateTesting

@Suite struct RequestIDTests {
    static let token = "/v1/providers/acme-rides/tokens/consumer?tripId=trip-42"

    /// 15 characters of the gateway's base-32 alphabet.
    static func isGenerated(_ id: String?) -> Bool {
        guard let id, id.utf8.count == 15 else { return false }
        return id.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "v")).contains($0) }
    }

    @Test(arguments: ["trace-42", "A.b_c-9", String(repeating: "z", count: 64)])
    func aWellFormedIncomingIDIsEchoedOnAnswersAndErrors(id: String) async throws {
        try await GatewayFixture().withGateway { gateway in
            let cases: [(String, String, String?, Int)] = [
                ("GET", Self.token, GatewayFixture.apiKey, 200), ("GET", Self.token, nil, 401),
                ("GET", "/nowhere", nil, 404), ("POST", Self.token, nil, 405), ("GET", "/healthz", nil, 200),
            ]
            for (method, path, key, status) in cases {
                let response = try await gateway.request(method, path, bearer: key, headers: [("X-Request-ID", id)])
                #expect(response.status == status)
                #expect(response.header("X-Request-ID") == id, "\(method) \(path)")
            }
        }
    }

    @Test(arguments: ["", String(repeating: "z", count: 65), "has space", "semi;colon", "quo\"te", "slash/ed"])
    func aMalformedIncomingIDIsReplacedByAGeneratedOne(id: String) async throws {
        try await GatewayFixture().withGateway { gateway in
            let response = try await gateway.get(Self.token, bearer: GatewayFixture.apiKey, headers: [("X-Request-ID", id)])
            #expect(response.status == 200)
            #expect(Self.isGenerated(response.header("X-Request-ID")), "\(response.header("X-Request-ID") ?? "none")")
        }
    }

    @Test func twoIncomingIDsAreReplacedByAGeneratedOne() async throws {
        try await GatewayFixture().withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            try await connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-ID: one\r\nX-Request-ID: two\r\n\r\n")
            let response = try #require(try await connection.readResponse())
            #expect(response.status == 200)
            #expect(response.values("X-Request-ID").count == 1)
            #expect(Self.isGenerated(response.header("X-Request-ID")))
        }
    }

    @Test func everyRequestWithoutOneGetsADistinctID() async throws {
        try await GatewayFixture().withGateway { gateway in
            var ids: Set<String> = []
            for _ in 0..<20 {
                let response = try await gateway.get(Self.token, bearer: GatewayFixture.apiKey)
                let id = try #require(response.header("X-Request-ID"))
                #expect(Self.isGenerated(id), "\(id)")
                ids.insert(id)
            }
            #expect(ids.count == 20)
        }
    }

    /// The first denial of a kind is logged one by one: with the request's ID and the peer's address.
    @Test func theDenialLogLineCarriesTheRequestIDAndThePeer() async throws {
        let logs = LogRecorder()
        try await GatewayFixture().withGateway(logs: logs) { gateway in
            let response = try await gateway.get(Self.token, bearer: "wrong-key-0123456789", headers: [("X-Request-ID", "trace-denied-1")])
            #expect(response.status == 401)
            let generated = try await gateway.get(Self.token, headers: [("X-Request-ID", "not valid")])
            #expect(generated.status == 401)
        }
        let denial = try #require(logs.all.first { $0.text.contains("token request denied") })
        #expect(denial.text.contains("request_id=trace-denied-1"), "\(denial.text)")
        #expect(denial.text.contains("peer=127.0.0.1"), "\(denial.text)")
        #expect(!logs.all.contains { $0.text.contains("not valid") })
    }
}
