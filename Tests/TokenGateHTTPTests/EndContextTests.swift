import Foundation
import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// The lifecycle API on the admin listener: ending a trip evicts its cached token and refuses new ones with 410,
/// until it is lifted or the configured time passes, whatever reloads happen meanwhile.
@Suite struct EndContextTests {
    static let endTrip1 = "/admin/v1/providers/acme-rides/contexts/consumer/trip-1/end"

    @Test func endingEvictsAndRefusesUntilLifted() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
            let tokenPath = "/v1/providers/acme-rides/tokens/consumer?tripId=trip-1"
            let first = try await gateway.get(tokenPath, bearer: GatewayFixture.apiKey)
            #expect(first.status == 200)
            #expect(fixture.probe.calls == 1)

            let ended = try await admin.request("POST", Self.endTrip1, bearer: GatewayFixture.acmeAdminKey)
            #expect(ended.status == 200, "\(ended.text)")
            #expect(ended.json["ended"] == true)
            #expect(ended.json["evictedTokens"] == 1)
            #expect(ended.json["endedUntil"] == .integer(fixture.clock.now + 7200))

            let refused = try await gateway.get(tokenPath, bearer: GatewayFixture.apiKey)
            #expect(refused.status == 410)
            #expect(refused.errorCode == "context_ended")
            #expect(refused.json["token"] == nil)
            // Every other trip is served as before; the ended one cost no backend call.
            #expect(try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-2", bearer: GatewayFixture.apiKey).status == 200)
            #expect(fixture.probe.calls == 2)

            let lifted = try await admin.request("DELETE", Self.endTrip1, bearer: GatewayFixture.acmeAdminKey)
            #expect(lifted.status == 200, "\(lifted.text)")
            #expect(lifted.json["wasEnded"] == true)
            let again = try await gateway.get(tokenPath, bearer: GatewayFixture.apiKey)
            #expect(again.status == 200)
            // Evicted when it ended: a fresh mint, not the old token.
            #expect(fixture.probe.calls == 3)
            let liftedTwice = try await admin.request("DELETE", Self.endTrip1, bearer: GatewayFixture.acmeAdminKey)
            #expect(liftedTwice.json["wasEnded"] == false)
        }
    }

    @Test func anEndedTripStaysEndedAcrossAReloadAndUntilItsTimeIsUp() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
            #expect(try await admin.request("POST", Self.endTrip1, bearer: GatewayFixture.globalAdminKey).status == 200)
            // A reload that changes the provider (new limits): a new generation, the same ended trips.
            try fixture.rewriteConfig {
                $0.replacingOccurrences(of: "rateLimits: {}", with: "rateLimits: { caller: { rate: 1000/min, burst: 100 } }")
            }
            try await gateway.reloader.reload(trigger: "test")
            #expect(gateway.service.generation.number == 2)
            let tokenPath = "/v1/providers/acme-rides/tokens/consumer?tripId=trip-1"
            #expect(try await gateway.get(tokenPath, bearer: GatewayFixture.apiKey).status == 410)
            // Two hours (endedContexts.refuseFor) later it is served again.
            fixture.clock.jumpWall(by: 7200)
            #expect(try await gateway.get(tokenPath, bearer: GatewayFixture.apiKey).status == 200)
        }
    }

    @Test func aDeliveryConsumersIDEndsAsATrackingAndATaskID() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
            let path = "/admin/v1/providers/acme-rides/contexts/delivery-consumer/parcel-9/end"
            #expect(try await admin.request("POST", path, bearer: GatewayFixture.acmeAdminKey).status == 200)
            for query in ["trackingId=parcel-9", "taskId=parcel-9"] {
                let response = try await gateway.get("/v1/providers/acme-rides/tokens/delivery-consumer?\(query)", bearer: GatewayFixture.apiKey)
                #expect(response.status == 410, "\(query)")
            }
            // The same ID as a vehicle is another entity.
            #expect(try await gateway.get("/v1/providers/acme-rides/tokens/driver?vehicleId=parcel-9", bearer: GatewayFixture.apiKey).status == 200)
        }
    }

    @Test(
        arguments: [
            // (method, path, key, status, code)
            ("POST", endTrip1, nil, 401, "unauthenticated"),
            ("POST", endTrip1, GatewayFixture.apiKey, 401, "unauthenticated"),  // a client's key is no admin key
            ("POST", endTrip1, GatewayFixture.otherAdminKey, 403, "forbidden"),  // another provider's admin key
            ("POST", "/admin/v1/providers/nobody-here/contexts/consumer/trip-1/end", GatewayFixture.globalAdminKey, 404, "unknown_provider"),
            ("POST", "/admin/v1/providers/acme-rides/contexts/server/trip-1/end", GatewayFixture.globalAdminKey, 400, "invalid_request"),
            ("POST", "/admin/v1/providers/acme-rides/contexts/teleporter/trip-1/end", GatewayFixture.globalAdminKey, 404, "unknown_token_type"),
            ("POST", "/admin/v1/providers/acme-rides/contexts/consumer/*/end", GatewayFixture.globalAdminKey, 400, "invalid_request"),
            ("GET", endTrip1, GatewayFixture.globalAdminKey, 405, "method_not_allowed"),
            // The key is checked before the provider: a wrong key learns nothing, not even which providers exist, and
            // a provider's key nothing of other tenants.
            ("POST", "/admin/v1/providers/nobody-here/contexts/consumer/trip-1/end", "tg_wrong_admin_key", 401, "unauthenticated"),
            ("POST", "/admin/v1/providers/nobody-here/contexts/consumer/trip-1/end", nil, 401, "unauthenticated"),
            ("POST", "/admin/v1/providers/nobody-here/contexts/consumer/trip-1/end", GatewayFixture.acmeAdminKey, 403, "forbidden"),
        ] as [(String, String, String?, Int, String)])
    func refusesWithoutTheRightAdminKeyOrContext(method: String, path: String, key: String?, status: Int, code: String) async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let response = try await RunningGateway.Endpoint(baseURL: gateway.adminURL).request(method, path, bearer: key)
            #expect(response.status == status, "\(response.text)")
            #expect(response.errorCode == code)
            // Nothing was ended.
            #expect(try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-1", bearer: GatewayFixture.apiKey).status == 200)
        }
    }

    /// The `{contextId}` segment is percent-decoded as UTF-8, `+` a plus (a path is no form), and the ID follows
    /// Fleet Engine's rule; a batch's JSON carries IDs as JSON strings. A refused ID is named with its rule.
    @Test func anIDInThePathIsDecodedAsUTF8AndCheckedAgainstFleetEnginesRule() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
            // Sent as written: an HTTP client library would re-encode `%FF`.
            let connection = try await RawConnection.open(port: try #require(Int(gateway.adminURL.split(separator: ":").last ?? "")))
            func end(_ segment: String) async throws -> (status: Int, json: JSONObject) {
                let target = "/admin/v1/providers/acme-rides/contexts/consumer/\(segment)/end"
                try await connection.send(
                    "POST \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(GatewayFixture.acmeAdminKey)\r\n\r\n")
                let response = try #require(try await connection.readResponse())
                return (response.status, try JSON.parse(response.body).objectValue ?? [:])
            }
            func trip(_ query: String) async throws -> Int {
                try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=\(query)", bearer: GatewayFixture.apiKey).status
            }
            let spaced = try await end("p1%20space")
            #expect(spaced.status == 200 && spaced.json["contextId"] == "p1 space", "\(spaced.json)")
            #expect(try await trip("p1+space") == 410)
            #expect(try await trip("p1%2Bspace") == 200)
            #expect(try await end("a+b").json["contextId"] == "a+b")
            #expect(try await trip("a%2Bb") == 410)
            #expect(try await trip("a+b") == 200)
            #expect(try await end("caf%C3%A9%20%F0%9F%9A%95").json["contextId"] == "caf\u{E9} \u{1F695}")
            #expect(try await trip("caf%C3%A9+%F0%9F%9A%95") == 410)
            for (segment, rule) in [
                ("a%2Fb", "contains '/', ':', '?', ',' or '#'"), ("%FF", "is not valid UTF-8"), ("e%CC%81", "is not in Unicode Normalization Form C"),
                (String(repeating: "x", count: 65), "is longer than 64 characters (Unicode code points)"), ("*", "is '*', which is never an ID"),
            ] {
                let refused = try await end(segment)
                #expect(refused.status == 400 && refused.json["error"]?.objectValue?["code"] == "invalid_request", "\(segment)")
                #expect(refused.json["error"]?.objectValue?["message"] == .string("contextId \(rule)"), "\(segment)")
            }

            let batch: JSONObject = [
                "contexts": [
                    .object(["tokenType": "consumer", "contextId": "tab\there"]), .object(["tokenType": "driver", "contextId": "\u{1F695} 7"]),
                ]
            ]
            let ended = try await admin.request(
                "POST", "/admin/v1/providers/acme-rides/contexts/end", bearer: GatewayFixture.acmeAdminKey, body: JSON.serialize(.object(batch)))
            #expect(ended.status == 200 && ended.json["ended"] == 2, "\(ended.text)")
            #expect(try await trip("tab%09here") == 410)
            #expect(
                try await gateway.get("/v1/providers/acme-rides/tokens/driver?vehicleId=%F0%9F%9A%95+7", bearer: GatewayFixture.apiKey).status == 410)
            // One entry outside the rule refuses the whole batch, naming the rule (its index is in the log).
            let mixed: JSONObject = [
                "contexts": [.object(["tokenType": "consumer", "contextId": "fine"]), .object(["tokenType": "consumer", "contextId": "e\u{301}"])]
            ]
            let refused = try await admin.request(
                "POST", "/admin/v1/providers/acme-rides/contexts/end", bearer: GatewayFixture.acmeAdminKey, body: JSON.serialize(.object(mixed)))
            #expect(refused.status == 400)
            #expect(refused.json["error"]?.objectValue?["message"] == "contextId is not in Unicode Normalization Form C")
            #expect(try await trip("fine") == 200)
        }
    }

    /// Wrong admin keys are counted, logged and limited per address like callers' failures (60 a minute, 20 at
    /// once): past the limit they are answered 429 with Retry-After, while a right key from the same address
    /// still ends trips.
    @Test func wrongAdminKeysAreCountedLoggedAndLimitedButNeverLockOutARightKey() async throws {
        let fixture = try GatewayFixture()
        let logs = LogRecorder()
        try await fixture.withGateway(logs: logs) { gateway in
            let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
            var statuses: [Int] = []
            for attempt in 0..<30 {
                let response = try await admin.request("POST", Self.endTrip1, bearer: "tg_guess_\(attempt)")
                statuses.append(response.status)
                if response.status == 429 {
                    #expect(response.errorCode == "rate_limited")
                    #expect(Int(response.header("Retry-After") ?? "") ?? 0 >= 1)
                }
            }
            #expect(statuses.prefix(20).allSatisfy { $0 == 401 }, "\(statuses)")
            #expect(statuses.suffix(5).allSatisfy { $0 == 429 }, "\(statuses)")
            let ended = try await admin.request("POST", Self.endTrip1, bearer: GatewayFixture.acmeAdminKey)
            #expect(ended.status == 200, "\(ended.text)")

            let metrics = try await gateway.metrics()
            #expect(
                metrics.contains(#"tokengate_admin_auth_failures_total{code="unauthenticated"} \#(statuses.filter { $0 == 401 }.count)"#),
                "\(metrics)")
            #expect(metrics.contains(#"tokengate_admin_auth_failures_total{code="rate_limited"} \#(statuses.filter { $0 == 429 }.count)"#))
            let lines = logs.all.map(\.text)
            #expect(lines.filter { $0.contains("wrong admin key") }.count == statuses.filter { $0 == 401 }.count)
            // The key a caller tried is never logged.
            #expect(!lines.contains { $0.contains("tg_guess_") })
        }
    }

    @Test func theLifecycleAPIIsNotOnThePublicListener() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let response = try await gateway.request("POST", Self.endTrip1, bearer: GatewayFixture.globalAdminKey)
            #expect(response.status == 404)
            #expect(try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-1", bearer: GatewayFixture.apiKey).status == 200)
        }
    }
}
