import Foundation
import JOSE
import Logging
import OpenSSLPrimitives
import StaticKeySigner
import Testing
import TokenGateCore
import TokenGateTesting

/// Fleet Engine's own events end trips and shipments: log entries pushed by a Pub/Sub subscription to the admin
/// listener, each with an OIDC token a stand-in for Google signs with a test key published as a JWKS.
@Suite struct FleetEventTests {
    static let apiKey = "acme-backend-key-0123456789"
    static let audience = "https://tokengate.acme.test/events/v1/pubsub/acme-rides"
    static let pushAccount = "fleet-events-push@acme-rides.iam.gserviceaccount.com"
    static let adminKey = "acme-admin-key-0123456789"

    /// Google's side: the key its OIDC tokens are signed with, published as the JWKS the gateway fetches.
    struct Google {
        let key: JWSKey
        let fetcher: CountingJWKSFetcher

        init() throws {
            key = try JWSKey.generate(.rs256, keyID: "google-oidc-1")
            fetcher = CountingJWKSFetcher(body: try JWKSet(keys: [key.publicKey()]).publicJSON())
        }

        /// An OIDC token as Pub/Sub signs it for a push; each argument can be made wrong.
        func token(
            now: Int64, audience: String = FleetEventTests.audience, email: String = FleetEventTests.pushAccount,
            verified: Bool = true, issuer: String = "https://accounts.google.com", lifetime: Int64 = 3600, key: JWSKey? = nil
        ) throws -> String {
            let claims: JSONObject = [
                "iss": .string(issuer), "aud": .string(audience), "azp": "1134567890", "sub": "1134567890",
                "email": .string(email), "email_verified": .bool(verified), "iat": .integer(now), "exp": .integer(now + lifetime),
            ]
            return try JWSSigner(key: key ?? self.key).sign(claims: claims)
        }
    }

    /// A push envelope carrying `entry` (a LogEntry) as Pub/Sub delivers it.
    static func push(_ entry: [UInt8], messageID: String = "136969346945") -> String {
        let envelope: JSONObject = [
            "message": .object([
                "data": .string(Data(entry).base64EncodedString()), "messageId": .string(messageID),
                "publishTime": "2026-11-27T07:00:00Z", "attributes": .object(["logging.googleapis.com/timestamp": "2026-11-27T07:00:00Z"]),
            ]),
            "subscription": "projects/acme-rides/subscriptions/tokengate-fleet-events",
        ]
        return String(decoding: JSON.serialize(.object(envelope)), as: UTF8.self)
    }

    static func tripEntry(_ trip: String, status: String, project: String = "acme-rides") -> [UInt8] {
        FleetEngineLogEntryShape.entry(
            "type.googleapis.com/maps.fleetengine.v1.UpdateTripLog",
            response: ["name": .string("providers/\(project)/trips/\(trip)"), "status": .string(status)])
    }

    static func configuration(_ directory: TemporaryDirectory) throws -> String {
        let digest = HexBytes.encode(try Digest.sha256(Array(apiKey.utf8)))
        return try directory.write(
            "config.yaml",
            """
            providers:
              acme-rides:
                backend:
                  type: static-key
                  keys:
                    consumer: [{ serviceAccountFile: keys/consumer.json, generateIfMissing: true }]
                    delivery-consumer: [{ serviceAccountFile: keys/delivery.json, generateIfMissing: true }]
                    driver: [{ serviceAccountFile: keys/driver.json, generateIfMissing: true }]
                    delivery-driver: [{ serviceAccountFile: keys/delivery-driver.json, generateIfMissing: true }]
                clients:
                  - name: dispatch
                    type: api-key
                    keySha256: \(digest)
                    allow: { consumer: any, delivery-consumer: any, driver: any, delivery-driver: any }
                adminKeys: [{ name: acme-ops, keySha256: \(HexBytes.encode(try Digest.sha256(Array(adminKey.utf8)))) }]
                events:
                  audience: \(audience)
                  serviceAccount: \(pushAccount)
                  endOn: { driver: [offline, deleted] }
              quiet-fleet:
                backend:
                  type: static-key
                  keys:
                    consumer: [{ serviceAccountFile: keys/quiet.json, generateIfMissing: true }]
                clients:
                  - { name: dispatch, type: api-key, keySha256: \(digest), allow: { consumer: any } }
            """)
    }

    static func withGateway(logs: LogRecorder? = nil, _ body: (RunningGateway, Google, ManualClock) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let google = try Google()
        let clock = ManualClock()
        try await RunningGateway.with(
            configuration: try configuration(directory), registry: BackendRegistry([StaticKeySignerFactory()]), clock: clock.gatewayClock,
            logger: logs?.logger ?? Logger(label: "tokengate-test", factory: { _ in SwiftLogNoOpLogHandler() }), jwksFetcher: google.fetcher
        ) { gateway in
            // Google's keys fetched once, by the refresher `serve` runs.
            try #require(try await eventually { gateway.service.generation.keySets.keySets.values.allSatisfy { $0.current() != nil } })
            try await body(gateway, google, clock)
        }
    }

    static func send(_ gateway: RunningGateway, _ body: String, token: String?, provider: String = "acme-rides") async throws -> GatewayResponse {
        var headers = [("Content-Type", "application/json")]
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        return try await RunningGateway.Endpoint(baseURL: gateway.adminURL).request(
            "POST", "/events/v1/pubsub/\(provider)", headers: headers, body: Array(body.utf8))
    }

    static func trip(_ id: String) -> String { "/v1/providers/acme-rides/tokens/consumer?tripId=\(id)" }

    @Test func aCompletedTripIsEndedOnceAndRefusedFromThenOn() async throws {
        try await Self.withGateway { gateway, google, clock in
            #expect(try await gateway.get(Self.trip("trip-42"), bearer: Self.apiKey).status == 200)
            let push = Self.push(Self.tripEntry("trip-42", status: "TRIP_STATUS_COMPLETE"))
            let answer = try await Self.send(gateway, push, token: try google.token(now: clock.now))
            #expect(answer.status == 200, "\(answer.text)")
            #expect(answer.json["outcome"] == "ended")
            #expect(answer.json["contexts"] == .array([.object(["tokenType": "consumer", "contextId": "trip-42"])]))
            let refused = try await gateway.get(Self.trip("trip-42"), bearer: Self.apiKey)
            #expect(refused.status == 410 && refused.errorCode == "context_ended")

            // Pub/Sub delivers at least once: the same push again changes nothing, and is acknowledged.
            let again = try await Self.send(gateway, push, token: try google.token(now: clock.now))
            #expect(again.status == 200 && again.json["outcome"] == "duplicate")

            // A trip still under way is not ended; a canceled one is.
            let enRoute = Self.push(Self.tripEntry("trip-43", status: "TRIP_STATUS_ENROUTE_TO_DROPOFF"))
            let moving = try await Self.send(gateway, enRoute, token: try google.token(now: clock.now))
            #expect(moving.json["outcome"] == "ignored")
            #expect(try await gateway.get(Self.trip("trip-43"), bearer: Self.apiKey).status == 200)
            let cancel = Self.push(Self.tripEntry("trip-43", status: "TRIP_STATUS_CANCELED"))
            let canceled = try await Self.send(gateway, cancel, token: try google.token(now: clock.now))
            #expect(canceled.json["outcome"] == "ended")
            #expect(try await gateway.get(Self.trip("trip-43"), bearer: Self.apiKey).status == 410)

            let scrape = MetricsScrape(try await gateway.metrics())
            #expect(scrape["tokengate_fleet_events_total", ["provider": "acme-rides", "outcome": "ended"]] == 2)
            #expect(scrape["tokengate_fleet_events_total", ["provider": "acme-rides", "outcome": "duplicate"]] == 1)
            #expect(scrape["tokengate_fleet_events_total", ["provider": "acme-rides", "outcome": "ignored"]] == 1)
        }
    }

    /// A vehicle log entry with its own time (Cloud Logging's `timestamp`, epoch milliseconds).
    static func vehicleEntry(_ vehicle: String, state: String, loggedAt milliseconds: Int64) -> [UInt8] {
        var entry = FleetEngineLogEntryShape.entry(
            "type.googleapis.com/maps.fleetengine.v1.UpdateVehicleLog",
            response: ["name": .string("providers/acme-rides/vehicles/\(vehicle)"), "state": .string(state)])
        guard case .object(var object)? = try? JSON.parse(entry) else { return entry }
        // As Cloud Logging writes it, to the nanosecond (Foundation's formatter, not the gateway's parser, writes it).
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let text = formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        object["timestamp"] = .string(text.dropLast() + "456789Z")
        entry = JSON.serialize(.object(object))
        return entry
    }

    static func driver(_ id: String) -> String { "/v1/providers/acme-rides/tokens/driver?vehicleId=\(id)" }

    /// An event lifts only what an event ended, and only when it was logged after that end: an operator's end (a
    /// revoked driver) stays through the vehicle's next ONLINE update, and an ONLINE entry delivered late (Pub/Sub does
    /// not order its deliveries) never lifts a newer OFFLINE.
    @Test func anEventLiftsOnlyAnOlderEventsEnd() async throws {
        try await Self.withGateway { gateway, google, clock in
            let t = clock.now * 1000
            // The operator ends van-1; the vehicle reports ONLINE: kept.
            let ended = try await RunningGateway.Endpoint(baseURL: gateway.adminURL).request(
                "POST", "/admin/v1/providers/acme-rides/contexts/driver/van-1/end", bearer: Self.adminKey)
            #expect(ended.status == 200, "\(ended.text)")
            let online = try await Self.send(
                gateway, Self.push(Self.vehicleEntry("van-1", state: "VEHICLE_STATE_ONLINE", loggedAt: t + 1000)),
                token: try google.token(now: clock.now))
            #expect(online.status == 200 && online.json["outcome"] == "kept", "\(online.text)")
            #expect(try await gateway.get(Self.driver("van-1"), bearer: Self.apiKey).status == 410)

            // An event ends van-2 (OFFLINE at t+5 s); an ONLINE logged before it, delivered after: kept.
            let offline = try await Self.send(
                gateway, Self.push(Self.vehicleEntry("van-2", state: "VEHICLE_STATE_OFFLINE", loggedAt: t + 5000), messageID: "2"),
                token: try google.token(now: clock.now))
            #expect(offline.json["outcome"] == "ended", "\(offline.text)")
            let late = try await Self.send(
                gateway, Self.push(Self.vehicleEntry("van-2", state: "VEHICLE_STATE_ONLINE", loggedAt: t + 4000), messageID: "3"),
                token: try google.token(now: clock.now))
            #expect(late.json["outcome"] == "kept", "\(late.text)")
            #expect(try await gateway.get(Self.driver("van-2"), bearer: Self.apiKey).status == 410)
            // An ONLINE logged after it lifts it.
            let back = try await Self.send(
                gateway, Self.push(Self.vehicleEntry("van-2", state: "VEHICLE_STATE_ONLINE", loggedAt: t + 6000), messageID: "4"),
                token: try google.token(now: clock.now))
            #expect(back.json["outcome"] == "lifted", "\(back.text)")
            #expect(try await gateway.get(Self.driver("van-2"), bearer: Self.apiKey).status == 200)
        }
    }

    @Test func aDeliveredShipmentEndsItsTaskAndTrackingID() async throws {
        try await Self.withGateway { gateway, google, clock in
            let tracking = "/v1/providers/acme-rides/tokens/delivery-consumer?trackingId=parcel-9"
            #expect(try await gateway.get(tracking, bearer: Self.apiKey).status == 200)
            let entry = FleetEngineLogEntryShape.entry(
                "type.googleapis.com/maps.fleetengine.delivery.log.v1.UpdateTaskLog",
                response: [
                    "name": "providers/acme-rides/tasks/task-1", "state": "TASK_STATE_LOG_CLOSED", "type": "TASK_TYPE_LOG_DELIVERY",
                    "taskOutcome": "TASK_OUTCOME_LOG_SUCCEEDED", "trackingId": "parcel-9",
                ])
            let answer = try await Self.send(gateway, Self.push(entry), token: try google.token(now: clock.now))
            #expect(answer.json["outcome"] == "ended", "\(answer.text)")
            #expect(try await gateway.get(tracking, bearer: Self.apiKey).status == 410)
            #expect(try await gateway.get("/v1/providers/acme-rides/tokens/delivery-consumer?taskId=task-1", bearer: Self.apiKey).status == 410)
        }
    }

    /// Fleet Engine's deletions (2025) end what they delete by default: a trip, a vehicle, a delivery vehicle (both
    /// delivery drivers' tokens); a deletion that failed ends nothing; the entity created again later with the same
    /// ID is served again, but not by a creation older than the deletion (Pub/Sub delivers out of order).
    @Test func aDeletedEntityIsEndedAndServedAgainOnlyWhenCreatedAfterwards() async throws {
        try await Self.withGateway { gateway, google, clock in
            let trip = Self.trip("p1+space")
            #expect(try await gateway.get(trip, bearer: Self.apiKey).status == 200)
            let deleted = FleetEngineLogEntryShape.deletion(
                "type.googleapis.com/maps.fleetengine.v1.DeleteTripLog", request: ["tripId": "p1 space"], at: "2026-11-27T07:00:00Z")
            let answer = try await Self.send(gateway, Self.push(deleted), token: try google.token(now: clock.now))
            #expect(answer.json["outcome"] == "ended", "\(answer.text)")
            #expect(answer.json["contexts"] == .array([.object(["tokenType": "consumer", "contextId": "p1 space"])]))
            #expect(try await gateway.get(trip, bearer: Self.apiKey).status == 410)

            let van = "/v1/providers/acme-rides/tokens/delivery-driver?deliveryVehicleId=van%203"
            let vehicle = "/v1/providers/acme-rides/tokens/driver?vehicleId=%F0%9F%9A%95-7"
            #expect(try await gateway.get(van, bearer: Self.apiKey).status == 200)
            #expect(try await gateway.get(vehicle, bearer: Self.apiKey).status == 200)
            for entry in [
                FleetEngineLogEntryShape.deletion(
                    "type.googleapis.com/maps.fleetengine.delivery.log.v1.DeleteDeliveryVehicleLog",
                    request: ["name": "providers/acme-rides/deliveryVehicles/van 3"], at: "2026-11-27T07:00:01Z"),
                FleetEngineLogEntryShape.deletion(
                    "type.googleapis.com/maps.fleetengine.v1.DeleteVehicleLog", request: ["vehicleId": "\u{1F695}-7"], at: "2026-11-27T07:00:02Z"),
            ] {
                let ended = try await Self.send(gateway, Self.push(entry), token: try google.token(now: clock.now))
                #expect(ended.json["outcome"] == "ended", "\(ended.text)")
            }
            #expect(try await gateway.get(van, bearer: Self.apiKey).status == 410)
            #expect(try await gateway.get(vehicle, bearer: Self.apiKey).status == 410)

            // A deletion Fleet Engine refused deleted nothing.
            let failed = FleetEngineLogEntryShape.deletion(
                "type.googleapis.com/maps.fleetengine.v1.DeleteTripLog", request: ["tripId": "trip-9"], at: "2026-11-27T07:00:03Z",
                error: ["httpStatusCode": 400, "code": "FAILED_PRECONDITION", "message": "Trip is active and assigned to a vehicle"])
            let refused = try await Self.send(gateway, Self.push(failed), token: try google.token(now: clock.now))
            #expect(refused.json["outcome"] == "ignored", "\(refused.text)")
            #expect(try await gateway.get(Self.trip("trip-9"), bearer: Self.apiKey).status == 200)

            // The trip created again: a creation logged before the deletion lifts nothing, one logged after does.
            func created(at time: String) -> [UInt8] {
                FleetEngineLogEntryShape.entry(
                    "type.googleapis.com/maps.fleetengine.v1.CreateTripLog",
                    response: ["name": "providers/acme-rides/trips/p1 space", "status": "TRIP_STATUS_NEW"], at: time)
            }
            let stale = try await Self.send(gateway, Self.push(created(at: "2026-11-27T06:59:00Z")), token: try google.token(now: clock.now))
            #expect(stale.json["outcome"] == "kept", "\(stale.text)")
            #expect(try await gateway.get(trip, bearer: Self.apiKey).status == 410)
            let again = try await Self.send(gateway, Self.push(created(at: "2026-11-27T08:00:00Z")), token: try google.token(now: clock.now))
            #expect(again.json["outcome"] == "lifted", "\(again.text)")
            #expect(try await gateway.get(trip, bearer: Self.apiKey).status == 200)
        }
    }

    /// Forged, expired, wrong-audience, wrong-account and unverified pushes change nothing, are refused (so Pub/Sub
    /// retries them) and counted.
    @Test func anUnverifiedPushEndsNothing() async throws {
        try await Self.withGateway { gateway, google, clock in
            let push = Self.push(Self.tripEntry("trip-7", status: "TRIP_STATUS_COMPLETE"))
            let now = clock.now
            let forger = try JWSKey.generate(.rs256, keyID: "google-oidc-1")
            let tokens: [(String, String?)] = [
                ("no token", nil),
                ("an admin key instead", "global-admin-key-0123456789"),
                ("signed by another key under Google's kid", try google.token(now: now, key: forger)),
                ("expired", try google.token(now: now - 7200)),
                ("for another audience", try google.token(now: now, audience: "https://elsewhere.test/push")),
                ("for another account", try google.token(now: now, email: "someone@evil-project.iam.gserviceaccount.com")),
                ("with an unverified email", try google.token(now: now, verified: false)),
                ("from another issuer", try google.token(now: now, issuer: "https://login.evil.test")),
                ("living longer than an hour", try google.token(now: now, lifetime: 7200)),
            ]
            for (what, token) in tokens {
                let answer = try await Self.send(gateway, push, token: token)
                #expect(answer.status == 401 && answer.errorCode == "unauthenticated", "\(what): \(answer.status) \(answer.text)")
            }
            #expect(try await gateway.get(Self.trip("trip-7"), bearer: Self.apiKey).status == 200)
            let scrape = MetricsScrape(try await gateway.metrics())
            #expect(scrape["tokengate_fleet_events_total", ["provider": "acme-rides", "outcome": "unauthenticated"]] == Double(tokens.count))
            // A provider without events, and a path naming none, answer as a bad token does: which tenants receive
            // events is not told.
            for provider in ["quiet-fleet", "nobody-here"] {
                let refused = try await Self.send(gateway, push, token: try google.token(now: now), provider: provider)
                #expect(refused.status == 401 && refused.errorCode == "unauthenticated", "\(provider): \(refused.text)")
                #expect(refused.body == (try await Self.send(gateway, push, token: nil)).body)
            }
        }
    }

    /// The push route faces the Internet: refused pushes are limited per client address (then 429, counted, not
    /// logged) and logged in aggregate, while a verified push is never limited.
    @Test func refusedPushesAreLimitedPerAddressAndLoggedInAggregate() async throws {
        let logs = LogRecorder()
        try await Self.withGateway(logs: logs) { gateway, google, clock in
            let push = Self.push(Self.tripEntry("trip-9", status: "TRIP_STATUS_COMPLETE"))
            var statuses: [Int] = []
            for _ in 0..<200 { statuses.append(try await Self.send(gateway, push, token: "forged").status) }
            #expect(statuses.prefix(20).allSatisfy { $0 == 401 })
            #expect(statuses.suffix(100).allSatisfy { $0 == 429 }, "\(Set(statuses))")
            let limited = try await Self.send(gateway, push, token: "forged")
            #expect(limited.errorCode == "rate_limited" && limited.header("Retry-After") != nil)
            // A right push from the same address is never refused for the others' failures.
            let verified = try await Self.send(gateway, push, token: try google.token(now: clock.now))
            #expect(verified.status == 200 && verified.json["outcome"] == "ended", "\(verified.text)")
            let lines = logs.all.filter { $0.message == "fleet event push refused" }
            #expect(lines.count <= 2, "\(lines.count) log lines for 200 refusals")
            let scrape = MetricsScrape(try await gateway.metrics())
            #expect((scrape["tokengate_fleet_events_total", ["provider": "acme-rides", "outcome": "rate_limited"]] ?? 0) >= 100)
        }
    }

    /// What a verified push cannot act on is acknowledged and counted, never refused (Pub/Sub would retry it for
    /// days): a body that is no push, an entry that is not JSON, another project's entry.
    @Test func aVerifiedPushThatCannotBeActedOnIsAcknowledged() async throws {
        try await Self.withGateway { gateway, google, clock in
            let token = try google.token(now: clock.now)
            let notAPush = try await Self.send(gateway, #"{"hello":"world"}"#, token: token)
            #expect(notAPush.status == 200 && notAPush.json["outcome"] == "malformed")
            let notJSON = try await Self.send(gateway, Self.push(Array("plain text".utf8)), token: token)
            #expect(notJSON.status == 200 && notJSON.json["outcome"] == "malformed")
            let rivals = Self.push(Self.tripEntry("trip-8", status: "TRIP_STATUS_COMPLETE", project: "rival-rides"))
            let foreign = try await Self.send(gateway, rivals, token: token)
            #expect(foreign.status == 200 && foreign.json["outcome"] == "ignored")
            #expect(try await gateway.get(Self.trip("trip-8"), bearer: Self.apiKey).status == 200)
        }
    }
}

/// LogEntry JSON in the shape Fleet Engine's Cloud Logging sink writes.
enum FleetEngineLogEntryShape {
    static func entry(_ type: String, response: JSONObject, at timestamp: String? = nil) -> [UInt8] {
        var entry: JSONObject = [
            "insertId": "1a2b3c",
            "jsonPayload": .object(["@type": .string(type), "request": .object([:]), "response": .object(response)]),
            "resource": .object(["type": "fleetengine.googleapis.com/Fleet", "labels": .object(["resource_container": "projects/acme-rides"])]),
            "logName": "projects/acme-rides/logs/fleetengine.googleapis.com%2Fupdate_trip",
        ]
        if let timestamp { entry["timestamp"] = .string(timestamp) }
        return JSON.serialize(.object(entry))
    }

    /// A deletion's entry: its call returns nothing, so a `request` and no `response`; an `errorResponse` (and
    /// severity ERROR) when the call failed.
    static func deletion(_ type: String, request: JSONObject, at timestamp: String, error: JSONObject? = nil) -> [UInt8] {
        var payload: JSONObject = ["@type": .string(type), "request": .object(request)]
        var entry: JSONObject = [
            "insertId": "7g8h9i", "timestamp": .string(timestamp),
            "resource": .object(["type": "fleetengine.googleapis.com/Fleet", "labels": .object(["resource_container": "projects/acme-rides"])]),
            "logName": "projects/acme-rides/logs/fleetengine.googleapis.com%2Fdelete_trip",
        ]
        if let error {
            payload["errorResponse"] = .object(error)
            entry["severity"] = "ERROR"
        }
        entry["jsonPayload"] = .object(payload)
        return JSON.serialize(.object(entry))
    }
}
