import Foundation
import Testing
import TokenGateClient

@Suite struct TokenRequestTests {
    @Test(arguments: [
        (TokenContext.trip("trip-42"), "/v1/providers/acme-rides/tokens/consumer?tripId=trip-42"),
        (.vehicle("vehicle-7"), "/v1/providers/acme-rides/tokens/driver?vehicleId=vehicle-7"),
        (.deliveryVehicle("dv-1"), "/v1/providers/acme-rides/tokens/delivery-driver?deliveryVehicleId=dv-1"),
        (.tracking("parcel-9"), "/v1/providers/acme-rides/tokens/delivery-consumer?trackingId=parcel-9"),
        (.task("task-3"), "/v1/providers/acme-rides/tokens/delivery-consumer?taskId=task-3"),
        (.trip("a&b=c/d#e f"), "/v1/providers/acme-rides/tokens/consumer?tripId=a%26b%3Dc%2Fd%23e%20f"),
        (
            .trustedDeliveryVehicle("van-7", task: "task-1"),
            "/v1/providers/acme-rides/tokens/trusted-delivery-driver?deliveryVehicleId=van-7&taskId=task-1"
        ),
        (.trustedDeliveryVehicle("van-7", task: "*"), "/v1/providers/acme-rides/tokens/trusted-delivery-driver?deliveryVehicleId=van-7&taskId=%2A"),
        (.tasks(["task-1", "task-2"]), "/v1/providers/acme-rides/tokens/batch-tasks?taskIds=task-1%2Ctask-2"),
        (.fleetReader, "/v1/providers/acme-rides/tokens/fleet-reader"),
        (.deliveryFleetReader, "/v1/providers/acme-rides/tokens/delivery-fleet-reader"),
    ])
    func requestsTheContractPathWithTheCallerCredential(context: TokenContext, path: String) async throws {
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        _ = try await Fixtures.provider(transport, clock: clock).token(for: context)
        let request = try #require(transport.requests.first)
        #expect(request.url.absoluteString == "http://127.0.0.1:8080" + path)
        #expect(request.headers["Authorization"] == "Bearer s3cret-session")
    }

    @Test(arguments: ["https://api.example.com/tokengate", "https://api.example.com/tokengate/"])
    func keepsTheBaseURLPathPrefix(base: String) async throws {
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        var configuration = Fixtures.configuration()
        configuration.baseURL = try #require(URL(string: base))
        let provider = TokenProvider(configuration: configuration, transport: transport, clock: clock) { "k" }
        _ = try await provider.token(for: .vehicle("v"))
        #expect(
            transport.requests.first?.url.absoluteString
                == "https://api.example.com/tokengate/v1/providers/acme-rides/tokens/driver?vehicleId=v")
    }

    @Test func emptyContextIDIsRefusedWithoutARequest() async throws {
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        let provider = Fixtures.provider(transport, clock: clock)
        let error = await #expect(throws: TokenGateClientError.self) { try await provider.token(for: .trip("")) }
        #expect(error?.code == .invalidRequest)
        #expect(transport.count == 0)
    }

    @Test(arguments: [TokenContext.trustedDeliveryVehicle("van-7", task: ""), .tasks([]), .tasks(["task-1", ""])])
    func anEmptyPartOfAContextIsRefusedWithoutARequest(context: TokenContext) async throws {
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        let provider = Fixtures.provider(transport, clock: clock)
        await #expect(throws: TokenGateClientError.self) { try await provider.token(for: context) }
        #expect(transport.count == 0)
    }

    @Test func tokenDescriptionRedactsTheToken() async throws {
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        let token = try await Fixtures.provider(transport, clock: clock).fleetEngineToken(for: .trip("trip-42"))
        #expect(!String(describing: token).contains("token-1"))
    }
}
