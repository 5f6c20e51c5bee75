import Foundation
import JOSE
import RESP
import Testing
import TokenGateCore
import TokenGateTesting

/// Ending a trip at one replica's admin API reaches every replica.
@Suite(.timeLimit(.minutes(5)))
struct EndedContextReplicationTests {
    @Test func aTripEndedAtOneReplicaIsRefusedAndEvictedAtEveryReplicaWithinASecond() async throws {
        try await ScaleOutFixture.with { fixture, _, replicas in
            for replica in replicas { #expect(try await replica.consumerToken("trip-done").status == 200) }
            let ended = try await replicas[0].adminRequest("POST", "/admin/v1/providers/acme-rides/contexts/consumer/trip-done/end")
            #expect(ended.status == 200)
            // Within a second (longer under a sanitizer: TestTiming); docs/operations.md says milliseconds.
            let started = ContinuousClock.now
            for replica in replicas[1...] {
                #expect(
                    try await eventually(within: TestTiming.bound(.seconds(1)), every: .milliseconds(10)) {
                        try await replica.consumerToken("trip-done").errorCode == "context_ended"
                    })
            }
            #expect(ContinuousClock.now - started < TestTiming.bound(.seconds(2)))
            // Ended first, evicted second (a request between the two is refused before the cache): the eviction may
            // trail the first refusal a moment, most under a sanitizer.
            let cache = replicas[1].service.generation.providers[ProviderID("acme-rides")!]!
            #expect(try await eventually(within: TestTiming.bound(.seconds(1)), every: .milliseconds(10)) { cache.cachedTokenCount == 0 })

            // Lifted at another replica: served everywhere again.
            let lifted = try await replicas[2].adminRequest("DELETE", "/admin/v1/providers/acme-rides/contexts/consumer/trip-done/end")
            #expect(lifted.status == 200)
            for replica in replicas {
                #expect(
                    try await eventually(within: TestTiming.bound(.seconds(1)), every: .milliseconds(10)) {
                        try await replica.consumerToken("trip-done").status == 200
                    })
            }
        }
    }

    /// Any ID Fleet Engine takes (a space, `%`, `=`, an emoji, a control character) is ended and lifted at every
    /// replica: the channel's message carries it percent-encoded, and it reads back as the same ID.
    @Test func anyFleetEngineIDEndedAtOneReplicaIsRefusedAtEveryReplica() async throws {
        try await ScaleOutFixture.with { fixture, _, replicas in
            let encoded = "p1%20space%25%F0%9F%9A%95%0A%3D"
            for replica in replicas { #expect(try await replica.consumerToken(encoded).status == 200) }
            let path = "/admin/v1/providers/acme-rides/contexts/consumer/\(encoded)/end"
            let ended = try await replicas[0].adminRequest("POST", path)
            #expect(ended.status == 200 && ended.json["contextId"] == "p1 space%\u{1F695}\n=", "\(ended.text)")
            for replica in replicas[1...] {
                #expect(
                    try await eventually(within: TestTiming.bound(.seconds(1)), every: .milliseconds(10)) {
                        try await replica.consumerToken(encoded).errorCode == "context_ended"
                    })
                // The same trip however the query spells it.
                #expect(try await replica.consumerToken("p1+space%25%F0%9F%9A%95%0a=").errorCode == "context_ended")
            }
            #expect(try await replicas[2].adminRequest("DELETE", path).status == 200)
            for replica in replicas {
                #expect(
                    try await eventually(within: TestTiming.bound(.seconds(1)), every: .milliseconds(10)) {
                        try await replica.consumerToken(encoded).status == 200
                    })
            }
        }
    }

    /// An end deletes the context's sealed token from Redis, so once the end is lifted no replica adopts the token
    /// minted before it; and a lift a replica never heard of (its subscription cut as it was published) is caught
    /// up when it subscribes again.
    @Test func anEndedTripLeavesNoTokenInRedisAndAMissedLiftIsCaughtUp() async throws {
        try await ScaleOutFixture.with { fixture, redis, replicas in
            let before = try await replicas[0].consumerToken("trip-gone")
            #expect(before.status == 200)
            let tokenKeys = { try await redis.withClient { try await $0.send(["KEYS", "tokengate:token:*"]).elements?.count ?? -1 } }
            // Stored while the token went to the caller.
            #expect(try await eventually { try await tokenKeys() == 1 })
            #expect(try await replicas[0].adminRequest("POST", "/admin/v1/providers/acme-rides/contexts/consumer/trip-gone/end").status == 200)
            #expect(try await tokenKeys() == 0)
            #expect(try await replicas[0].adminRequest("DELETE", "/admin/v1/providers/acme-rides/contexts/consumer/trip-gone/end").status == 200)
            // Replica 2 never cached the trip: it mints afresh (a second later, so another token) rather than adopting
            // the token from before the end.
            fixture.clock.advance(by: .seconds(1))
            let calls = fixture.totalBackendCalls
            let after = try await eventually(within: TestTiming.bound(.seconds(2)), every: .milliseconds(10)) {
                try await replicas[2].consumerToken("trip-gone").status == 200
            }
            #expect(after)
            #expect(fixture.totalBackendCalls == calls + 1)
            #expect(try await replicas[2].consumerToken("trip-gone").token != before.token)

            // An end whose lift message replica 1 misses: every subscription is cut just before the lift.
            #expect(try await replicas[0].adminRequest("POST", "/admin/v1/providers/acme-rides/contexts/consumer/trip-late/end").status == 200)
            #expect(
                try await eventually(within: TestTiming.bound(.seconds(1)), every: .milliseconds(10)) {
                    try await replicas[1].consumerToken("trip-late").errorCode == "context_ended"
                })
            _ = try await redis.withClient { try await $0.send(["CLIENT", "KILL", "TYPE", "pubsub"]) }
            #expect(try await replicas[0].adminRequest("DELETE", "/admin/v1/providers/acme-rides/contexts/consumer/trip-late/end").status == 200)
            // Subscribed again (a second later), replica 1 forgets what it learned before and asks the store.
            #expect(
                try await eventually(within: TestTiming.bound(.seconds(3)), every: .milliseconds(20)) {
                    try await replicas[1].consumerToken("trip-late").status == 200
                })
        }
    }

    /// Fleet Engine's own event, pushed by Pub/Sub to one replica, ends the trip at every replica.
    @Test func aTripCompletedInFleetEngineIsRefusedAtEveryReplicaWithinASecond() async throws {
        let google = try JWSKey.generate(.rs256, keyID: "google-oidc-1")
        let audience = "https://tokengate.acme.test/events/v1/pubsub/acme-rides"
        let account = "fleet-events-push@acme-rides.iam.gserviceaccount.com"
        let events = "    events: { audience: \(audience), serviceAccount: \(account) }"
        let keys = StaticJWKSFetcher(body: try JWKSet(keys: [google.publicKey()]).publicJSON())
        try await ScaleOutFixture.with(providerExtra: events, jwksFetcher: keys) { fixture, _, replicas in
            for replica in replicas { #expect(try await replica.consumerToken("trip-over").status == 200) }
            let now = fixture.clock.now
            let token = try JWSSigner(key: google).sign(claims: [
                "iss": "https://accounts.google.com", "aud": .string(audience), "email": .string(account), "email_verified": true,
                "iat": .integer(now), "exp": .integer(now + 3600),
            ])
            let entry: JSONObject = [
                "jsonPayload": .object([
                    "@type": "type.googleapis.com/maps.fleetengine.v1.UpdateTripLog",
                    "response": .object(["name": "providers/acme-rides/trips/trip-over", "status": "TRIP_STATUS_COMPLETE"]),
                ])
            ]
            let push: JSONObject = [
                "message": .object(["data": .string(Data(JSON.serialize(.object(entry))).base64EncodedString()), "messageId": "4242"]),
                "subscription": "projects/acme-rides/subscriptions/tokengate",
            ]
            // The replica fetched Google's keys in the background: a push before that is refused, and Pub/Sub retries.
            var answer: GatewayResponse?
            #expect(
                try await eventually(within: TestTiming.bound(.seconds(10))) {
                    answer = try await RunningGateway.Endpoint(baseURL: replicas[0].adminURL).request(
                        "POST", "/events/v1/pubsub/acme-rides", bearer: token, body: JSON.serialize(.object(push)))
                    return answer?.status == 200
                })
            #expect(answer?.json["outcome"] == "ended", "\(answer?.text ?? "")")
            let started = ContinuousClock.now
            for replica in replicas {
                #expect(
                    try await eventually(within: TestTiming.bound(.seconds(1)), every: .milliseconds(10)) {
                        try await replica.consumerToken("trip-over").errorCode == "context_ended"
                    })
            }
            #expect(ContinuousClock.now - started < TestTiming.bound(.seconds(2)))
        }
    }

    @Test func aReplicaStartedLaterRefusesWhatWasEndedBefore() async throws {
        try await ScaleOutFixture.with(replicas: 1) { fixture, redis, replicas in
            let ended = try await replicas[0].adminRequest("POST", "/admin/v1/providers/acme-rides/contexts/driver/van-9/end")
            #expect(ended.status == 200)
            // A second replica, started after the message went out, reads no list: its first mint of the vehicle
            // finds the end in the store.
            try await RunningGateway.with(
                configuration: fixture.configPath, registry: BackendRegistry([ProbedFactory(probe: BackendProbe())]),
                clock: fixture.clock.gatewayClock
            ) { late in
                let refused = try await eventually(within: TestTiming.bound(.seconds(2))) {
                    let answer = try await late.get("/v1/providers/acme-rides/tokens/driver?vehicleId=van-9", bearer: ScaleOutFixture.apiKey)
                    return answer.errorCode == "context_ended"
                }
                #expect(refused)
            }
            _ = redis
        }
    }

    /// Each tenant's share of the store's ends is its own, and holds across replicas: one tenant at its share is
    /// refused at any replica, all or none, while another tenant ends contexts as before.
    @Test func aTenantAtItsShareOfTheStoreIsRefusedAtEveryReplicaAndAnotherIsNot() async throws {
        try await ScaleOutFixture.with(replicas: 2, topLevel: "endedContexts: { maxEntries: 20 }") { _, redis, replicas in
            let body = { (trips: Range<Int>) in
                JSON.serialize(.object(["contexts": .array(trips.map { .object(["tokenType": "consumer", "contextId": .string("full-\($0)")]) })]))
            }
            let filled = try await RunningGateway.Endpoint(baseURL: replicas[0].adminURL).request(
                "POST", "/admin/v1/providers/acme-rides/contexts/end", bearer: ScaleOutFixture.adminKey, body: body(0..<20))
            #expect(filled.status == 200, "\(filled.text)")
            let more = try await RunningGateway.Endpoint(baseURL: replicas[1].adminURL).request(
                "POST", "/admin/v1/providers/acme-rides/contexts/end", bearer: ScaleOutFixture.adminKey, body: body(19..<21))
            #expect(more.status == 507 && more.errorCode == "ended_list_full")
            #expect(try await replicas[1].consumerToken("full-20").status == 200, "nothing of the refused batch was ended")
            #expect(try await replicas[1].adminRequest("POST", "/admin/v1/providers/other-fleet/contexts/consumer/theirs/end").status == 200)
            #expect(
                try await replicas[0].consumerToken("theirs", provider: "other-fleet", key: ScaleOutFixture.otherKey).errorCode == "context_ended")
            let counts = try await redis.withClient { client in
                (
                    try await client.send(["ZCARD", "tokengate:ended-index:{acme-rides}"]).integer,
                    try await client.send(["ZCARD", "tokengate:ended-index:{other-fleet}"]).integer
                )
            }
            #expect(counts.0 == 20 && counts.1 == 1)
        }
    }

    /// A mint under way when its context is ended stores nothing: the end takes the mint's lock away with the token.
    @Test func aMintUnderWayWhenItsTripEndsLeavesNothingInRedis() async throws {
        try await ScaleOutFixture.with { fixture, redis, replicas in
            fixture.probes[0].holdCalls()
            let minting = Task { try await replicas[0].consumerToken("trip-racing") }
            #expect(try await eventually { fixture.probes[0].calls == 1 })
            #expect(try await replicas[1].adminRequest("POST", "/admin/v1/providers/acme-rides/contexts/consumer/trip-racing/end").status == 200)
            fixture.probes[0].releaseCalls()
            _ = try await minting.value
            // The store would have happened within this second; the lock is gone too, so it never does.
            try await Task.sleep(for: .seconds(1))
            let keys = try await redis.withClient { try await $0.send(["KEYS", "tokengate:*"]).elements?.compactMap(\.string) ?? [] }
            #expect(!keys.contains { $0.hasPrefix("tokengate:token:") || $0.hasPrefix("tokengate:lock:") }, "\(keys)")
        }
    }
}

extension RunningGateway {
    /// `method` on the admin listener with the fixture's admin key.
    func adminRequest(_ method: String, _ path: String) async throws -> GatewayResponse {
        try await Endpoint(baseURL: adminURL).request(method, path, bearer: ScaleOutFixture.adminKey)
    }
}

/// Serves one JWKS for any URL (Google's OIDC keys, here a test key).
struct StaticJWKSFetcher: JWKSFetcher {
    let body: [UInt8]

    func fetchJWKS(from url: String) async throws -> [UInt8] { body }
}
