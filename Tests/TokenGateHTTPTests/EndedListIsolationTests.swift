import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// Each tenant has a list of ended contexts of its own: one tenant ending more contexts than its share neither
/// refuses another tenant's ends nor drops any end, its own included, before its time; what did not fit is refused
/// `507 ended_list_full` and nothing is half-done.
@Suite(.timeLimit(.minutes(5))) struct EndedListIsolationTests {
    static func endOne(_ gateway: RunningGateway, _ provider: String, _ trip: String) async throws -> GatewayResponse {
        try await RunningGateway.Endpoint(baseURL: gateway.adminURL).request(
            "POST", "/admin/v1/providers/\(provider)/contexts/consumer/\(trip)/end", bearer: GatewayFixture.globalAdminKey)
    }

    static func endMany(_ gateway: RunningGateway, _ provider: String, _ trips: [String]) async throws -> GatewayResponse {
        let body: JSONValue = .object(["contexts": .array(trips.map { .object(["tokenType": "consumer", "contextId": .string($0)]) })])
        return try await RunningGateway.Endpoint(baseURL: gateway.adminURL).request(
            "POST", "/admin/v1/providers/\(provider)/contexts/end", bearer: GatewayFixture.globalAdminKey, body: JSON.serialize(body))
    }

    static func token(_ gateway: RunningGateway, _ provider: String, _ trip: String) async throws -> GatewayResponse {
        let key = provider == "acme-rides" ? GatewayFixture.apiKey : GatewayFixture.otherTenantKey
        return try await gateway.get("/v1/providers/\(provider)/tokens/consumer?tripId=\(trip)", bearer: key)
    }

    @Test func oneTenantFillingItsListNeitherRefusesNorDropsAnothersEnds() async throws {
        let fixture = try GatewayFixture(endedContexts: "{ refuseFor: 2h, maxEntries: 50 }")
        try await fixture.withGateway { gateway in
            #expect(try await Self.endOne(gateway, "other-fleet", "kept-1").status == 200)
            // acme-rides ends its whole share, then one more.
            let filled = try await Self.endMany(gateway, "acme-rides", (0..<50).map { "flood-\($0)" })
            #expect(filled.status == 200 && filled.json["ended"] == .integer(50), "\(filled.text)")
            let refused = try await Self.endOne(gateway, "acme-rides", "one-more")
            #expect(refused.status == 507)
            #expect(refused.errorCode == "ended_list_full")
            // Nothing changed for it: that trip is still served.
            #expect(try await Self.token(gateway, "acme-rides", "one-more").status == 200)
            // A batch that does not fit is refused whole, even its entries already ended.
            let batch = try await Self.endMany(gateway, "acme-rides", ["flood-0", "batch-new"])
            #expect(batch.status == 507 && batch.errorCode == "ended_list_full")
            #expect(try await Self.token(gateway, "acme-rides", "batch-new").status == 200)
            // Its own ends hold, every one of them: none was dropped to make room.
            for trip in ["flood-0", "flood-25", "flood-49"] {
                #expect(try await Self.token(gateway, "acme-rides", trip).errorCode == "context_ended")
            }
            // The other tenant: its end holds, and it ends more.
            #expect(try await Self.token(gateway, "other-fleet", "kept-1").errorCode == "context_ended")
            #expect(try await Self.endOne(gateway, "other-fleet", "kept-2").status == 200)
            #expect(try await Self.token(gateway, "other-fleet", "kept-2").errorCode == "context_ended")
            // The list's memory: each tenant's share at most.
            let ended = gateway.service.contexts.endedContexts
            #expect(ended.entryCount(of: ProviderID("acme-rides")!) == 50)
            #expect(ended.entryCount(of: ProviderID("other-fleet")!) == 2)
        }
    }
}
