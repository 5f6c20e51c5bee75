import NIOCore
import RESPTesting
import Testing

@testable import RESP

/// One connection against a real server: pipelining, deadlines, error replies, RESP2 and RESP3 values.
@Suite struct ConnectionTests {
    @Test func aThousandConcurrentCommandsOnOneConnectionEachGetTheirOwnReply() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                try await client.withConnection { connection async throws in
                    try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                        for index in 0..<1000 {
                            group.addTask { (index, try await connection.send(["ECHO", "reply-\(index)"]).string) }
                        }
                        var seen = 0
                        for try await (index, reply) in group {
                            #expect(reply == "reply-\(index)")
                            seen += 1
                        }
                        #expect(seen == 1000)
                    }
                    #expect(try await RedisServer.clientCount(connection) == 1)
                }
            }
        }
    }

    @Test func anErrorReplyIsATypedServerError() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                try await client.set("text", to: "not a number")
                await #expect(throws: RESPError.server("ERR value is not an integer or out of range")) {
                    try await client.send(["INCR", "text"])
                }
                let error = await #expect(throws: RESPError.self) { try await client.send(["NOSUCHCOMMAND"]) }
                #expect(error?.serverCode == "ERR")
                #expect(try await client.ping() == "PONG")  // the connection is still in step
            }
        }
    }

    /// A command that outlives its deadline fails promptly with a timeout; its connection is closed (a late reply
    /// would answer the next command), and the pool goes on with a new one.
    @Test func aCommandPastItsDeadlineTimesOutAndThePoolRecovers() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient({ $0.maxConnections = 1 }) { client async throws in
                let clock = ContinuousClock()
                let started = clock.now
                // BLPOP on an empty list answers after its own timeout, 30 s, and holds up only its connection. The
                // 100 ms deadline must end the wait long before that: well within 20 s even on a machine whose
                // cooperative threads are busy with every other suite.
                await #expect(throws: RESPError.timeout(command: "BLPOP")) {
                    try await client.send(["BLPOP", "empty", "30"], deadline: .milliseconds(100))
                }
                #expect(clock.now - started < .seconds(20))
                // The pool's only connection was dropped: the next command goes on a fresh one, which the server
                // answers at once (on the old one it would wait behind BLPOP, then get BLPOP's reply).
                #expect(try await client.ping(deadline: .seconds(30)) == "PONG")
            }
        }
    }

    /// Whoever is told of a timeout finds the connection inactive already, so its next command goes elsewhere:
    /// the reply is failed on the event loop while the channel is still closing, and the caller may pick a
    /// connection at once on another thread. CI saw that window: the pool handed the closing connection to the next
    /// command, which failed as `connectionClosed`. Checked where the caller is first told, on the loop itself.
    @Test func aConnectionIsInactiveWhenItsTimeoutIsAnswered() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                try await client.withConnection { connection async throws in
                    let reply = connection.write(RESPCommand(["BLPOP", "empty", "30"]), deadline: .milliseconds(100))
                    let activeWhenTold = reply.futureResult.map { _ in true }.flatMapErrorThrowing { error in
                        guard case RESPError.timeout = error else { throw error }
                        return connection.isActive
                    }
                    #expect(try await activeWhenTold.get() == false)
                }
            }
        }
    }

    @Test func aTimeoutFailsTheOtherCommandsInFlightOnThatConnection() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                try await client.withConnection { connection async throws in
                    // A command that holds up the connection (not the server) for 120 s goes first: the server is
                    // seen blocking it before the next command is sent. Long, because under the whole suite the
                    // timeout's task waited more than 10 s for a cooperative thread and BLPOP answered first (CI);
                    // when the test passes, the timeout closes the connection and nothing waits for BLPOP.
                    let slow = Task { try await connection.send(["BLPOP", "empty", "120"], deadline: .seconds(300)) }
                    let blocking = try await server.withClient { observer async throws in
                        try await eventually {
                            let info = try await observer.send(["INFO", "clients"]).string ?? ""
                            return info.contains("blocked_clients:1\r\n")
                        }
                    }
                    try #require(blocking)
                    await #expect(throws: RESPError.timeout(command: "PING")) {
                        try await connection.send(["PING"], deadline: .milliseconds(100))
                    }
                    await #expect(throws: RESPError.connectionClosed) { try await slow.value }
                    #expect(!connection.isActive)
                }
            }
        }
    }

    @Test func resp2NullsAndNumbers() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                #expect(try await client.send(["GET", "missing"]) == .bulkString(nil))
                #expect(try await client.send(["INCRBY", "n", "-5"]) == .integer(-5))
                #expect(try await client.get("missing") == nil)
                #expect(try await client.send(["RPUSH", "list", "a", "b"]) == .integer(2))
                #expect(try await client.send(["LRANGE", "list", "0", "-1"]) == .array(["a", "b"]))
            }
        }
    }

    /// With HELLO 3 the server sends RESP3's own types; `DEBUG PROTOCOL` makes it send each of them.
    @Test func resp3TypesFromTheServer() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient({ $0.protocolVersion = .resp3 }) { client async throws in
                #expect(try await client.send(["GET", "missing"]) == .null)
                try await client.send(["HSET", "h", "f1", "v1", "f2", "v2"])
                #expect(try await client.send(["HGETALL", "h"]) == .map(["f1": "v1", "f2": "v2"]))
                try await client.send(["SADD", "s", "a", "b", "a"])
                #expect(try await client.send(["SMEMBERS", "s"]) == .set(["a", "b"]))
                try await client.send(["ZADD", "z", "1.5", "m"])
                #expect(try await client.send(["ZSCORE", "z", "m"]) == .double(1.5))
                #expect(try await client.send(["DEBUG", "PROTOCOL", "true"]) == .boolean(true))
                #expect(try await client.send(["DEBUG", "PROTOCOL", "false"]) == .boolean(false))
                #expect(try await client.send(["DEBUG", "PROTOCOL", "null"]) == .null)
                #expect(
                    try await client.send(["DEBUG", "PROTOCOL", "bignum"])
                        == .bigNumber("1234567999999999999999999999999999999"))
                let verbatim = try await client.send(["DEBUG", "PROTOCOL", "verbatim"])
                #expect(verbatim == .verbatimString(format: "txt", text: ByteBuffer(string: "This is a verbatim\nstring")))
                // An attribute is skipped; the value it describes is the reply.
                #expect(try await client.send(["DEBUG", "PROTOCOL", "attrib"]).string == "Some real reply following the attribute")
                let hello = try await client.send(["HELLO", "3"])
                guard case .map(let fields) = hello else {
                    Issue.record("HELLO is not a map: \(hello)")
                    return
                }
                #expect(fields["proto"] == .integer(3))
            }
        }
    }

    @Test func theConfiguredDatabaseIsSelected() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient({ $0.database = 3 }) { client async throws in
                try await client.set("where", to: "db3")
                let info = try await client.send(["CLIENT", "INFO"]).string ?? ""
                #expect(info.contains(" db=3 "))
            }
            try await server.withClient { client async throws in #expect(try await client.get("where") == nil) }
        }
    }
}
