import Foundation
import RESP
import Testing
import TokenGateTesting

@testable import TokenGateCore

/// What one bad key in Redis may cost: only the calls that touch it. A command Redis refuses (a key of the wrong
/// type) is answered locally without taking the store out of use, and a mint lock left without an expiry is taken
/// over instead of stalling every replica's mint of that context.
@Suite(.timeLimit(.minutes(5)))
struct SharedStoreRefusalTests {
    static let acme = ProviderID("acme-rides")!

    @Test func aKeyOfTheWrongTypeCostsOnlyItsOwnCallsNotTheStore() async throws {
        let logs = LogRecorder()
        try await ScaleOutFixture.with(logs: logs) { fixture, redis, replicas in
            let shared = try #require(replicas[0].service.sharedState)
            let broken = shared.tokenKey(TokenCacheKey(provider: Self.acme, context: .trip(ContextID("trip-broken")!)))
            try await redis.withClient { client in try await client.send(["HSET", broken, "field", "value"]) }
            // GET on a hash: WRONGTYPE. That request is answered (minted here), and nothing else changes.
            #expect(try await replicas[0].consumerToken("trip-broken").status == 200)
            let scrape = try await replicas[0].scrape()
            #expect(scrape["tokengate_shared_state_up"] == 1)
            #expect((scrape["tokengate_shared_state_errors_total", ["operation": "read"]] ?? 0) >= 1)
            #expect(!logs.all.contains { $0.text.contains("shared state unreachable") })
            #expect(logs.all.contains { $0.text.contains("refused a command") && $0.text.contains("WRONGTYPE") })

            // Within the second a failure would have marked the store down, the replicas still share.
            let before = fixture.totalBackendCalls
            #expect(try await replicas[0].consumerToken("trip-next").status == 200)
            #expect(try await replicas[1].consumerToken("trip-next").status == 200)
            #expect(fixture.totalBackendCalls == before + 1, "replica 1 read the token replica 0 stored")
        }
    }

    @Test func aMintLockWithoutAnExpiryIsTakenOverNotWaitedFor() async throws {
        try await ScaleOutFixture.with(sharedStateExtra: "  lockTimeout: 5s") { fixture, redis, replicas in
            let shared = try #require(replicas[0].service.sharedState)
            let lock = shared.lockKey(TokenCacheKey(provider: Self.acme, context: .trip(ContextID("trip-stuck")!)))
            try await redis.withClient { client in try await client.send(["SET", lock, "a-replica-long-gone"]) }
            let started = ContinuousClock.now
            #expect(try await replicas[0].consumerToken("trip-stuck").status == 200)
            // Taken over at once: not after twice lockTimeout, and the token is stored for the others.
            #expect(ContinuousClock.now - started < .seconds(10))
            #expect(try await replicas[0].scrape()["tokengate_shared_mints_total", ["provider": "acme-rides", "outcome": "locked"]] == 1)
            let calls = fixture.totalBackendCalls
            #expect(try await replicas[1].consumerToken("trip-stuck").status == 200)
            #expect(fixture.totalBackendCalls == calls)
            // The lock was released like any other.
            let remaining = try await redis.withClient { client in try await client.send(["EXISTS", lock]).integer }
            #expect(remaining == 0)
        }
    }
}
