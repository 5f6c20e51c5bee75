import Foundation
import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// Who the client is, through the real gateway on a port: callers from many loopback addresses (127.0.0.x), a
/// trusted proxy's `X-Forwarded-For`, a PROXY header, and a real haproxy in front. A good credential is never
/// refused because of somebody else's failures, and the per-peer limit follows the client, not the proxy.
@Suite(.timeLimit(.minutes(10))) struct ClientAddressTests {
    static let token = "/v1/providers/acme-rides/tokens/consumer?tripId=trip-1"

    /// One token request over its own connection from `source` (127.0.0.x), with `headers`; its status.
    static func status(
        port: Int, from source: UInt32 = 1, key: String, headers: [(String, String)] = []
    ) async throws -> Int {
        let connection = try await RawConnection.open(port: port, from: 0x7F00_0000 | source)
        let extra = headers.map { "\($0.0): \($0.1)\r\n" }.joined()
        try await connection.send("GET \(token) HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer \(key)\r\n\(extra)\r\n")
        let response = try await connection.readResponse()
        await connection.close()
        return response?.status ?? 0
    }

    /// `count` requests over one connection from `source`; their statuses.
    static func statuses(port: Int, from source: UInt32, key: String, count: Int, headers: [(String, String)] = []) async throws -> [Int] {
        let connection = try await RawConnection.open(port: port, from: 0x7F00_0000 | source)
        let extra = headers.map { "\($0.0): \($0.1)\r\n" }.joined()
        var statuses: [Int] = []
        for _ in 0..<count {
            try await connection.send("GET \(token) HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer \(key)\r\n\(extra)\r\n")
            statuses.append(try await connection.readResponse()?.status ?? 0)
        }
        await connection.close()
        return statuses
    }

    @Test func badKeysFromTwoHundredAddressesThenAValidKeyIsServed() async throws {
        // The bundled limits: 600 failures a minute per provider (burst 100), 60 per address (burst 20).
        try await GatewayFixture().withGateway { gateway in
            // Eight addresses at a time, each its 30 requests in turn on its own connection: what each address is
            // answered does not depend on the others' order, and 6,000 requests one after another outlasted the
            // suite's time limit on a loaded machine.
            let limited = try await withThrowingTaskGroup(of: Int.self) { group in
                var sources = (UInt32(10)..<210).makeIterator()
                func addNext() {
                    guard let source = sources.next() else { return }
                    group.addTask {
                        try await Self.statuses(port: gateway.port, from: source, key: "wrong-key-\(source)", count: 30).filter { $0 == 429 }.count
                    }
                }
                for _ in 0..<8 { addNext() }
                var limited = 0
                while let count = try await group.next() {
                    limited += count
                    addNext()
                }
                return limited
            }
            #expect(limited >= 5_800)
            // Before the fix a valid caller of this tenant got 429 on 15 of 16 requests here.
            for source: UInt32 in [2, 10, 209] {
                #expect(
                    try await Self.statuses(port: gateway.port, from: source, key: GatewayFixture.apiKey, count: 16)
                        == Array(repeating: 200, count: 16))
            }
        }
    }

    @Test func behindATrustedProxyThePerPeerLimitFollowsTheClientNamedInXForwardedFor() async throws {
        let logs = LogRecorder()
        let fixture = try GatewayFixture(server: "{ trustedProxies: [127.0.0.1/32] }", audit: "{ path: audit.jsonl }")
        try await fixture.withGateway(logs: logs) { gateway in
            // Client A floods bad keys through the proxy (127.0.0.1) and is limited after its burst of 20…
            let flood = try await Self.statuses(
                port: gateway.port, from: 1, key: "wrong-key", count: 25, headers: [("X-Forwarded-For", "198.51.100.7, 203.0.113.10")])
            #expect(flood.prefix(20).allSatisfy { $0 == 401 } && flood.suffix(5).allSatisfy { $0 == 429 }, "\(flood)")
            // …client B's bad key through the same proxy is its own first failure; its session token is verified.
            let otherClient = [("X-Forwarded-For", "203.0.113.11")]
            #expect(try await Self.status(port: gateway.port, key: "wrong-key", headers: otherClient) == 401)
            let session = try fixture.sessionToken(claims: ["trips": ["trip-1"]])
            #expect(try await Self.status(port: gateway.port, key: session, headers: otherClient) == 200)
            // Client A's own session token is shed before its signature is checked.
            let sessionOfA = try fixture.sessionToken(subject: "rider-a", claims: ["trips": ["trip-1"]])
            #expect(try await Self.status(port: gateway.port, key: sessionOfA, headers: [("X-Forwarded-For", "203.0.113.10")]) == 429)
            // The audit log names the client, not the proxy.
            let audit = try String(contentsOfFile: "\(fixture.directory.path)/audit.jsonl", encoding: .utf8)
            #expect(audit.contains("\"peer\":\"203.0.113.11\""), "\(audit)")
        }
        // So does the denial log.
        #expect(logs.all.contains { $0.text.contains("token request denied") && $0.text.contains("peer=203.0.113.10") })
    }

    @Test func anUntrustedPeerCannotDodgeItsLimitWithAForgedXForwardedFor() async throws {
        try await GatewayFixture(server: "{ trustedProxies: [127.0.0.1/32] }").withGateway { gateway in
            var statuses: [Int] = []
            for attempt in 0..<25 {
                statuses.append(
                    try await Self.status(
                        port: gateway.port, from: 5, key: "wrong-key", headers: [("X-Forwarded-For", "203.0.113.\(attempt)")]))
            }
            #expect(statuses.prefix(20).allSatisfy { $0 == 401 } && statuses.suffix(5).allSatisfy { $0 == 429 }, "\(statuses)")
            // Its neighbour at 127.0.0.6 is untouched.
            #expect(try await Self.status(port: gateway.port, from: 6, key: "wrong-key") == 401)
        }
    }

    @Test func hostileForwardingHeadersGetAnAnswerNeverACrash() async throws {
        try await GatewayFixture(server: "{ trustedProxies: [127.0.0.1/32] }").withGateway { gateway in
            let twoHundred = (0..<200).map { "198.51.100.\($0)" }.joined(separator: ", ")
            for value in [twoHundred, "garbage", ",,,,", "[::1", "unknown, 999.1.1.1:x", String(repeating: "1.", count: 2000)] {
                let status = try await Self.status(port: gateway.port, key: GatewayFixture.apiKey, headers: [("X-Forwarded-For", value)])
                #expect(status == 200, "X-Forwarded-For: \(value.prefix(40))…")
            }
        }
    }

    @Test func aPROXYHeaderFromATrustedPeerNamesTheClientAndAMalformedOneClosesTheConnection() async throws {
        let logs = LogRecorder()
        try await GatewayFixture(server: "{ trustedProxies: [127.0.0.1/32], proxyProtocol: v1 }").withGateway(logs: logs) { gateway in
            // Through the "proxy" (127.0.0.1): one client floods and is limited, another is not.
            func viaProxy(client: String, key: String) async throws -> Int {
                let connection = try await RawConnection.open(port: gateway.port)
                try await connection.send(
                    "PROXY TCP4 \(client) 127.0.0.1 4711 8080\r\nGET \(Self.token) HTTP/1.1\r\nHost: g\r\nAuthorization: Bearer \(key)\r\n\r\n")
                return try await connection.readResponse()?.status ?? 0
            }
            var flood: [Int] = []
            for _ in 0..<21 { flood.append(try await viaProxy(client: "203.0.113.20", key: "wrong-key")) }
            #expect(flood.last == 429 && flood.dropLast().allSatisfy { $0 == 401 }, "\(flood)")
            #expect(try await viaProxy(client: "203.0.113.21", key: "wrong-key") == 401)
            #expect(try await viaProxy(client: "203.0.113.21", key: GatewayFixture.apiKey) == 200)
            // A trusted peer without a valid header: the connection is closed, nothing answered.
            for bad in ["GET / HTTP/1.1\r\n\r\n", "PROXY TCP4 nonsense\r\n", "PROXY " + String(repeating: "x", count: 300)] {
                let connection = try await RawConnection.open(port: gateway.port)
                try await connection.send(bad)
                let drained = try await connection.drain()
                #expect(drained.closed && drained.bytes.isEmpty, "\(bad.prefix(20)): \(drained.bytes.count) bytes")
            }
            // An untrusted peer is not expected to send one: its forged header is a bad request.
            let untrusted = try await RawConnection.open(port: gateway.port, from: 0x7F00_0009)
            try await untrusted.send("PROXY TCP4 203.0.113.99 127.0.0.1 1 2\r\nGET \(Self.token) HTTP/1.1\r\nHost: g\r\n\r\n")
            #expect(try await untrusted.readResponse()?.status == 400)
            // Its plain requests are served as usual.
            #expect(try await Self.status(port: gateway.port, from: 9, key: GatewayFixture.apiKey) == 200)
        }
        #expect(logs.all.contains { $0.text.contains("bad PROXY protocol header") })
    }

    @Test(arguments: [HAProxyServer.Mode.forwardedFor, .proxyProtocolV2])
    func behindARealHAProxyOneClientsFloodDoesNotRefuseAnother(mode: HAProxyServer.Mode) async throws {
        let server = mode == .forwardedFor ? "{ trustedProxies: [127.0.0.1/32] }" : "{ trustedProxies: [127.0.0.1/32], proxyProtocol: v2 }"
        let fixture = try GatewayFixture(server: server)
        try await fixture.withGateway { gateway in
            try await HAProxyServer.with(backendPort: gateway.port, mode: mode) { haproxy in
                // 127.0.0.20 floods bad keys through haproxy, which reaches the gateway from 127.0.0.1.
                var flood: [Int] = []
                for _ in 0..<25 { flood.append(try await Self.status(port: haproxy.port, from: 20, key: "wrong-key")) }
                #expect(flood.prefix(20).allSatisfy { $0 == 401 } && flood.suffix(5).allSatisfy { $0 == 429 }, "\(flood)")
                // 127.0.0.21, through the same haproxy: its own failures only, and a new session token verified.
                #expect(try await Self.status(port: haproxy.port, from: 21, key: "wrong-key") == 401)
                let session = try fixture.sessionToken(claims: ["trips": ["trip-1"]])
                #expect(try await Self.status(port: haproxy.port, from: 21, key: session) == 200)
                // A client's forged X-Forwarded-For is to the left of what haproxy appends: never believed.
                let forged = [("X-Forwarded-For", "127.0.0.21")]
                #expect(try await Self.status(port: haproxy.port, from: 20, key: "wrong-key", headers: forged) == 429)
            }
        }
    }
}
