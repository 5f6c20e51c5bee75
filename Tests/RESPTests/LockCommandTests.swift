import NIOCore
import RESP
import RESPTesting
import Testing

/// The typed commands, with `SET NX PX` as the gateway's locks use it.
@Suite struct LockCommandTests {
    @Test func setNXSucceedsOnlyForTheFirstOwner() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                let clock = ContinuousClock()
                let started = clock.now
                // A minute: the lock outlives this test however long a loaded machine makes it take.
                #expect(try await client.set("lock:trip", to: "owner-a", onlyIfAbsent: true, expiresIn: .seconds(60)))
                #expect(try await !client.set("lock:trip", to: "owner-b", onlyIfAbsent: true, expiresIn: .seconds(60)))
                #expect(try await client.get("lock:trip") == ByteBuffer(string: "owner-a"))
                let ttl = try #require(try await client.send(["PTTL", "lock:trip"]).integer)
                // PX 60000 was applied (no expiry reads -1): what is left is 60 s less the time since, which a loaded
                // machine may stretch to seconds; it can be no less than 60 s minus what this test took (plus a
                // little for the server's millisecond clock).
                let elapsed = Int64((clock.now - started) / .milliseconds(1))
                #expect(ttl <= 60_000)
                #expect(ttl >= 60_000 - elapsed - 10)
            }
        }
    }

    @Test func aLockExpiresAfterItsPXSoTheNextOwnerGetsIt() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                #expect(try await client.set("lock:trip", to: "a", onlyIfAbsent: true, expiresIn: .milliseconds(50)))
                let acquired = try await eventually {
                    try await client.set("lock:trip", to: "b", onlyIfAbsent: true, expiresIn: .seconds(10))
                }
                #expect(acquired)
                #expect(try await client.get("lock:trip") == ByteBuffer(string: "b"))
            }
        }
    }

    /// Of many concurrent contenders, exactly one gets the lock.
    @Test func exactlyOneOfManyConcurrentContendersWins() async throws {
        try await RedisServer.with { server async throws in
            // 50 callers share 8 connections: running out of lease time on a loaded machine is by design, not what
            // this test is about (a waiter that is never served still fails, after 120 s).
            try await server.withClient({ $0.leaseTimeout = .seconds(120) }) { client async throws in
                let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for index in 0..<50 {
                        group.addTask {
                            // The lock outlives the contention, however long a loaded machine stretches it: a lock
                            // that expired meanwhile would rightly go to a second owner.
                            try await client.set(
                                "lock:x", to: "owner-\(index)", onlyIfAbsent: true, expiresIn: .seconds(600))
                        }
                    }
                    return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
                }
                #expect(winners == 1)
            }
        }
    }

    @Test func plainSetGetDeleteAndBinaryValues() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                let binary = ByteBuffer(bytes: [0, 13, 10, 255])
                #expect(try await client.set("k", to: binary))
                #expect(try await client.get("k") == binary)
                #expect(try await client.set("k", to: "overwritten"))
                #expect(try await client.delete(["k", "absent"]) == 1)
                #expect(try await client.get("k") == nil)
                #expect(try await client.ping() == "PONG")
            }
        }
    }
}
