import Foundation
import Logging
import Testing
import TokenGateCore
import TokenGateTesting

/// Connection limits: the read timeout, the idle timeout's job left to it, the connection cap, the listen backlog.
/// No test measures time: each checks what happened within generous bounds.
@Suite struct ConnectionTests {
    /// Sends `bytes` one at a time, `pause` apart, until the server closes the connection or `bytes` run out.
    static func dribble(_ bytes: String, on connection: RawConnection, pause: Duration = .milliseconds(100)) async throws {
        for byte in bytes.utf8 {
            guard try await connection.send([byte]) else { return }
            try await Task.sleep(for: pause)
        }
    }

    @Test func aClientSendingHalfItsHeadersIsDisconnectedAfterTheReadTimeout() async throws {
        let fixture = try GatewayFixture(server: "{ readTimeout: 300ms, idleTimeout: 1h }")
        try await fixture.withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            try await connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nAcc")
            let drained = try await connection.drain()
            #expect(drained.closed)
            #expect(drained.bytes.isEmpty)
        }
    }

    /// Each byte is activity, so an idle timeout alone never fires; the read timeout counts from the first byte.
    @Test func aClientDribblingItsHeadersIsDisconnectedAfterTheReadTimeout() async throws {
        let fixture = try GatewayFixture(server: "{ readTimeout: 300ms, idleTimeout: 1h }")
        try await fixture.withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            // 60 bytes at 100 ms: six seconds if nobody stops it.
            try await Self.dribble("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n", on: connection)
            #expect(try await connection.drain().closed)
        }
    }

    @Test func aClientDribblingABodyIsDisconnectedAfterTheReadTimeout() async throws {
        let fixture = try GatewayFixture(server: "{ readTimeout: 300ms, idleTimeout: 1h }")
        try await fixture.withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            // The route may answer before the body is in (it reads none); the body still has to arrive in time.
            try await connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 60\r\n\r\n")
            try await Self.dribble(String(repeating: "b", count: 60), on: connection)
            #expect(try await connection.drain().closed)
        }
    }

    /// A request refused at once (no credential) while its body is still coming: the answer says the connection ends,
    /// and the rest of the body is not read: the connection closes within the linger, not at a timeout, while the
    /// client keeps sending (it once streamed 7 GB in 10 s to be read and dropped).
    @Test func aRequestRefusedBeforeItsBodyIsInIsNotReadOn() async throws {
        let fixture = try GatewayFixture(server: "{ readTimeout: 5m, idleTimeout: 1h }")
        try await fixture.withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port, receiveTimeout: .seconds(10))
            let head = "GET /v1/providers/acme-rides/tokens/consumer?tripId=t-1 HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            let chunk = "2000\r\n" + String(repeating: "x", count: 0x2000) + "\r\n"
            #expect(try await connection.send(head + chunk))
            let answer = try await connection.readResponse()
            #expect(answer?.status == 401)
            #expect(answer?.header("Connection") == "close")
            // Keep sending: within seconds the server has closed, after at most the listener's body cap was read. The
            // linger is a second; 30 s allows a loaded machine and is still nothing like the 5-minute read timeout.
            let started = ContinuousClock.now
            var sent = 0
            while ContinuousClock.now - started < .seconds(40), try await connection.send(chunk) {
                sent += chunk.utf8.count
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(ContinuousClock.now - started < .seconds(30), "still open after \(sent) more bytes")
        }
    }

    /// A body larger than any route of the public listener takes closes the connection.
    @Test func aBodyOverThePublicListenersCapClosesTheConnection() async throws {
        let fixture = try GatewayFixture(server: "{ readTimeout: 5m, idleTimeout: 1h }")
        try await fixture.withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port, receiveTimeout: .seconds(5))
            try await connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n")
            var closed = false
            for _ in 0..<100 where !closed { closed = !(try await connection.send(String(repeating: "y", count: 1000))) }
            #expect(try await connection.drain().closed)
        }
    }

    /// After a request the parser refuses (a 431), the connection goes a moment after its answer, not at the idle
    /// timeout.
    @Test func aRefusedMalformedRequestClosesSoonAfterItsAnswer() async throws {
        let fixture = try GatewayFixture(server: "{ readTimeout: 5m, idleTimeout: 1h }")
        try await fixture.withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port, receiveTimeout: .seconds(5))
            try await connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: \(String(repeating: "z", count: 20_000))\r\n\r\n")
            let drained = try await connection.drain()
            #expect(drained.closed, "held open past the receive timeout")
            #expect(String(decoding: drained.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 431"))
        }
    }

    /// The read timeout is for a request on its way, not for a keep-alive connection waiting for the next one.
    @Test func anIdleKeepAliveConnectionOutlivesTheReadTimeout() async throws {
        let fixture = try GatewayFixture(server: "{ readTimeout: 200ms, idleTimeout: 1h }")
        try await fixture.withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            for _ in 0..<2 {
                try await connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                #expect(try await connection.readResponse()?.status == 200)
                try await Task.sleep(for: .milliseconds(700))
            }
        }
    }

    @Test func aConnectionPastTheCapIsClosedAtOnceWhileTheOthersKeepWorking() async throws {
        let fixture = try GatewayFixture(server: "{ maxConnections: 2 }")
        let logs = LogRecorder()
        try await fixture.withGateway(logs: logs) { gateway in
            let request = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            let first = try await RawConnection.open(port: gateway.port)
            let second = try await RawConnection.open(port: gateway.port)
            for connection in [first, second] {
                try await connection.send(request)
                #expect(try await connection.readResponse()?.status == 200)
            }
            let third = try await RawConnection.open(port: gateway.port)
            try await third.send(request)
            let refused = try await third.drain()
            #expect(refused.closed)
            #expect(refused.bytes.isEmpty)
            for connection in [first, second] {
                try await connection.send(request)
                #expect(try await connection.readResponse()?.status == 200)
            }
            // A place frees up once a connection closes (the close reaches the server asynchronously).
            await first.close()
            var served = false
            for _ in 0..<100 where !served {
                let next = try await RawConnection.open(port: gateway.port, receiveTimeout: .seconds(2))
                try await next.send(request)
                served = try await next.readResponse()?.status == 200
                if !served { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(served)
        }
        let line = try #require(logs.all.first { $0.text.contains("connection limit reached") })
        #expect(line.level == .warning)
        #expect(line.text.contains("max_connections=2"))
    }

    /// A request that asks for the connection to end, however it spells it (RFC 9112 §9.3), gets its answer and then
    /// the close; one that keeps it alive keeps it, through the router and the fast path alike.
    @Test(arguments: [
        ("HTTP/1.1", "Connection: Close\r\n", true), ("HTTP/1.1", "Connection: keep-alive, close\r\n", true),
        ("HTTP/1.0", "", true), ("HTTP/1.0", "Connection: Keep-Alive\r\n", false), ("HTTP/1.1", "", false),
    ])
    func connectionOptionsAreReadAsRFC9112Says(version: String, header: String, closes: Bool) async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            for path in ["/healthz", "/v1/providers/acme-rides/tokens/consumer?tripId=trip-1"] {
                let connection = try await RawConnection.open(port: gateway.port, receiveTimeout: .seconds(10))
                try await connection.send(
                    "GET \(path) \(version)\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(GatewayFixture.apiKey)\r\n\(header)\r\n")
                #expect(try await connection.readResponse()?.status == 200, "\(path) \(version) \(header)")
                if closes {
                    #expect(try await connection.drain().closed, "\(path) \(version) \(header)")
                } else {
                    try await connection.send("GET /healthz \(version)\r\nHost: 127.0.0.1\r\n\(header)\r\n")
                    #expect(try await connection.readResponse()?.status == 200, "\(path) \(version) \(header)")
                }
                await connection.close()
            }
        }
    }

    /// A connection to the admin listener it accepted and answered once (a slot frees asynchronously after a
    /// close, so a refused attempt is tried again).
    static func servedAdminConnection(port: Int) async throws -> RawConnection {
        for _ in 0..<100 {
            let connection = try await RawConnection.open(port: port, receiveTimeout: .seconds(5))
            try await connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            if try await connection.readResponse()?.status == 200 { return connection }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw CancellationError()
    }

    /// The admin listener has the public one's guards: a trickling or idle connection to it is cut as on the
    /// public port.
    @Test func theAdminListenerHasThePublicTimeouts() async throws {
        let fixture = try GatewayFixture(server: "{ readTimeout: 300ms, idleTimeout: 1s }")
        try await fixture.withGateway { gateway in
            let adminPort = try #require(gateway.adminURL.split(separator: ":").last.flatMap { Int($0) })
            // Half a request, then nothing: cut at the read timeout. Then nothing at all: cut at the idle timeout.
            let trickling = try await Self.servedAdminConnection(port: adminPort)
            try await trickling.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAcc")
            #expect(try await trickling.drain().closed)
            let idle = try await Self.servedAdminConnection(port: adminPort)
            #expect(try await idle.drain().closed)
        }
    }

    /// The admin listener has a cap of its own: connections piled up on it cannot take the public listener's
    /// descriptors. (The idle timeout is the default minute here, so the held connections stay.)
    @Test func theAdminListenerHasACapOfItsOwn() async throws {
        let fixture = try GatewayFixture(server: "{ maxConnections: 100, admin: { maxConnections: 2 } }")
        let logs = LogRecorder()
        try await fixture.withGateway(logs: logs) { gateway in
            let adminPort = try #require(gateway.adminURL.split(separator: ":").last.flatMap { Int($0) })
            let held = [try await Self.servedAdminConnection(port: adminPort), try await Self.servedAdminConnection(port: adminPort)]
            let third = try await RawConnection.open(port: adminPort)
            try await third.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let refused = try await third.drain()
            #expect(refused.closed && refused.bytes.isEmpty)
            #expect(try await gateway.get("/healthz").status == 200)
            for connection in held { await connection.close() }
        }
        #expect(logs.all.contains { $0.text.contains("connection limit reached") && $0.text.contains("listener=admin") })
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ss") || FileManager.default.isExecutableFile(atPath: "/bin/ss")))
    func theListenBacklogReachesTheSocket() async throws {
        let fixture = try GatewayFixture(server: "{ listenBacklog: 77 }")
        try await fixture.withGateway { gateway in
            // For a listening socket, ss shows the backlog as Send-Q: "LISTEN 0 77 127.0.0.1:PORT …".
            let (status, output) = try await ChildProcess.run("ss", ["-ltnH", "sport = :\(gateway.port)"])
            #expect(status == 0)
            let columns = output.split(whereSeparator: \.isWhitespace)
            #expect(columns.count >= 4 && columns[0] == "LISTEN" && columns[2] == "77", "\(output)")
        }
    }
}
