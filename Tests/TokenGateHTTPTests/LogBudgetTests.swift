import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// One tenant's flood of log lines cannot drown another's: each tenant's lines come from its own share of the log
/// (`server.logBudget`), the rest held back and counted in one line, and another tenant's line still written.
@Suite(.timeLimit(.minutes(5))) struct LogBudgetTests {
    @Test func oneTenantsFloodOfLinesLeavesAnothersLine() async throws {
        let fixture = try GatewayFixture()
        let logs = LogRecorder()
        try await fixture.withGateway(logs: logs) { gateway in
            let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
            // 260 ends of acme-rides, each a "context ended" line, eight at a time: past its burst of 200 lines.
            let burst = TenantLogBudget.defaultLimit.burst
            let ends = burst + 60
            try await withThrowingTaskGroup(of: Void.self) { group in
                var trips = (0..<ends).makeIterator()
                func addNext() {
                    guard let trip = trips.next() else { return }
                    group.addTask {
                        _ = try await admin.request(
                            "POST", "/admin/v1/providers/acme-rides/contexts/consumer/flood-\(trip)/end", bearer: GatewayFixture.globalAdminKey)
                    }
                }
                for _ in 0..<8 { addNext() }
                while try await group.next() != nil { addNext() }
            }
            #expect(
                try await admin.request("POST", "/admin/v1/providers/other-fleet/contexts/consumer/theirs/end", bearer: GatewayFixture.globalAdminKey)
                    .status == 200)
            let acme = logs.all.filter { $0.metadata["provider"] == "acme-rides" }
            let other = logs.all.filter { $0.metadata["provider"] == "other-fleet" && $0.message == "context ended" }
            // The fixture's clock stands still: acme-rides' share is its burst, 200 lines.
            #expect(acme.count <= burst, "\(acme.count) lines of acme-rides")
            #expect(other.count == 1)
            // The ends themselves all happened.
            #expect(
                try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=flood-\(ends - 1)", bearer: GatewayFixture.apiKey).status
                    == 410)

            // Once its share refills, one line says how many were held back.
            fixture.clock.advance(by: .seconds(20))
            _ = try await admin.request("POST", "/admin/v1/providers/acme-rides/contexts/consumer/later/end", bearer: GatewayFixture.globalAdminKey)
            let heldBack = logs.all.last { $0.metadata["held_back"] != nil && $0.metadata["provider"] == "acme-rides" }
            #expect(heldBack.flatMap { Int($0.metadata["held_back"] ?? "") }.map { $0 >= ends - burst } == true, "\(String(describing: heldBack))")
        }
    }
}
