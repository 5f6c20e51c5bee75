import Foundation
import JOSE
import RESP
import Testing
import TokenGateTesting

@testable import TokenGateCore

/// Ended stays ended at any scale: a million trips ended across two replicas, and a third replica started after
/// them refuses them all. The store keeps one key per ended trip that expires with its end, and one index per
/// provider; no replica reads a list of ends, so a start costs the same whatever the number, and no single Redis call
/// grows with it.
///
/// `TOKENGATE_ENDED_SCALE_CONTEXTS` sets how many trips are ended (default 1,000,000), `TOKENGATE_ENDED_SCALE_PROBES`
/// how many of them the third replica is asked for, spread evenly over them (default 20,000; `all` for every one).
@Suite(.timeLimit(.minutes(20)))
struct EndedAtScaleTests {
    static let environment = ProcessInfo.processInfo.environment
    static let contexts = environment["TOKENGATE_ENDED_SCALE_CONTEXTS"].flatMap(Int.init) ?? 1_000_000
    static let probes = environment["TOKENGATE_ENDED_SCALE_PROBES"].map { $0 == "all" ? contexts : Int($0) ?? 20_000 } ?? 20_000
    static let batch = 1000

    static func trip(_ index: Int) -> String { "t-\(index)" }

    @Test func aMillionTripsEndedAtTwoReplicasAreRefusedByAThirdStartedAfter() async throws {
        try await ScaleOutFixture.with(replicas: 2, topLevel: "endedContexts: { maxEntries: \(Self.contexts + 1000) }") { fixture, redis, replicas in
            // Any single command over 250 ms is logged by Redis itself: none may be. Reading the whole list of ends
            // took 54 to 141 ms at 130,000 and grew with it; a command here touches at most one batch of ends, though a
            // loaded two-core machine (or Redis growing a table) can stall any command for tens of milliseconds.
            _ = try await redis.withClient { client in
                try await client.send(["CONFIG", "SET", "slowlog-log-slower-than", "250000"])
                try await client.send(["SLOWLOG", "RESET"])
            }
            let clock = ContinuousClock()
            let ending = clock.now
            try await Self.endAll(at: replicas)
            print("ended-at-scale: \(Self.contexts) trips ended in \(clock.now - ending)")
            let index = try await redis.withClient { try await $0.send(["ZCARD", "tokengate:ended-index:{acme-rides}"]).integer }
            #expect(index == Int64(Self.contexts))

            // A third replica: what its start asks of Redis does not depend on how many trips ended.
            let before = try await Self.commandsServed(redis)
            try await RunningGateway.with(
                configuration: fixture.configPath, registry: BackendRegistry([ProbedFactory(probe: BackendProbe())]),
                clock: fixture.clock.gatewayClock
            ) { late in
                #expect(try await eventually { try await late.get("/readyz").status == 200 })
                let started = try await Self.commandsServed(redis) - before
                #expect(started < 50, "a start asked Redis \(started) commands")
                let probing = clock.now
                let refused = try await Self.probe(late)
                print("ended-at-scale: \(refused.count) probes in \(clock.now - probing); the late replica's start asked Redis \(started) commands")
                #expect(refused.wrong.isEmpty, "served or misanswered: \(refused.wrong.prefix(10))")
                #expect(refused.count == min(Self.probes, Self.contexts))
                // The first mint of a trip no end names is served.
                #expect(try await late.consumerToken("t-never-ended").status == 200)
            }
            // Each end expires with its time (refuseFor, 2 h here: the fixture's default), checked on a few.
            let now = fixture.clock.now
            try await redis.withClient { client in
                let shared = try #require(replicas[0].service.sharedState)
                for index in [0, Self.contexts / 2, Self.contexts - 1] {
                    let key = EndedContexts.Key(provider: ProviderID("acme-rides")!, tokenType: .consumer, id: ContextID(Self.trip(index))!)!
                    let expiry = try await client.send(["PEXPIRETIME", shared.endedKey(key)]).integer ?? -1
                    #expect(expiry > now * 1000 && expiry <= (now + 86_400 + 60) * 1000, "\(Self.trip(index)): \(expiry)")
                }
            }
            let slow = try await redis.withClient { try await $0.send(["SLOWLOG", "GET", "10"]).elements ?? [] }
            #expect(slow.isEmpty, "Redis logged slow commands: \(slow)")
        }
    }

    /// Ends every trip in batches of ``batch``, each batch at one of the two replicas in turn, a few at once.
    static func endAll(at replicas: [RunningGateway]) async throws {
        var failures: [String] = []
        try await withThrowingTaskGroup(of: String?.self) { group in
            for (number, start) in stride(from: 0, to: contexts, by: batch).enumerated() {
                if number >= 4, let failure = try await group.next() { failures += failure.map { [$0] } ?? [] }
                let range = start..<min(start + batch, contexts)
                let replica = replicas[number % replicas.count]
                group.addTask {
                    let body: JSONValue = .object([
                        "contexts": .array(range.map { .object(["tokenType": "consumer", "contextId": .string(trip($0))]) })
                    ])
                    let answer = try await RunningGateway.Endpoint(baseURL: replica.adminURL).request(
                        "POST", "/admin/v1/providers/acme-rides/contexts/end", bearer: ScaleOutFixture.adminKey,
                        body: JSON.serialize(body))
                    guard answer.status != 200 || answer.json["ended"] != .integer(Int64(range.count)) else { return nil }
                    return "\(range): \(answer.status) \(answer.text.prefix(200))"
                }
            }
            for try await failure in group { failures += failure.map { [$0] } ?? [] }
        }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }

    /// Asks `replica` for ``probes`` of the ended trips, spread evenly (the first and the last among them), 32 at
    /// once; returns how many were asked and those not answered `410 context_ended`.
    static func probe(_ replica: RunningGateway) async throws -> (count: Int, wrong: [String]) {
        let count = min(probes, contexts)
        let step = max(1, contexts / count)
        let indexes = (0..<count).map { min($0 * step, contexts - 1) }
        var wrong: [String] = []
        try await withThrowingTaskGroup(of: String?.self) { group in
            for (number, index) in indexes.enumerated() {
                if number >= 32, let answer = try await group.next() { wrong += answer.map { [$0] } ?? [] }
                group.addTask {
                    let answer = try await replica.consumerToken(trip(index))
                    guard answer.status != 410 || answer.errorCode != "context_ended" else { return nil }
                    return "\(trip(index)): \(answer.status) \(answer.errorCode ?? "")"
                }
            }
            for try await answer in group { wrong += answer.map { [$0] } ?? [] }
        }
        return (count, wrong)
    }

    /// The number of commands Redis has served since it started (`INFO stats`).
    static func commandsServed(_ redis: RedisServer) async throws -> Int {
        let info = try await redis.withClient { try await $0.send(["INFO", "stats"]).string ?? "" }
        let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("total_commands_processed:") }
        return line.flatMap { Int($0.split(separator: ":").last ?? "") } ?? 0
    }
}
