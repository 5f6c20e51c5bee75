import FileTokenSource
import Foundation
import JOSE
import Testing
import TokenBackendConformance
import TokenGateCore
import TokenGateTesting

@Suite struct FileTokenSourceConformanceTests {
    /// The file source meets the backend contract, with a token filed for the context the check asks of each type.
    @Test func theFileSourceMeetsTheContract() async throws {
        let fixture = try Fixture()
        func token(_ type: TokenType) throws -> String { try Fixture.token(BackendConformance.context(of: type, number: 1)) }
        let id = "conformance-1"
        try fixture.write(
            """
            consumer:
              \(id): \(try token(.consumer))
            driver:
              \(id): \(try token(.driver))
            delivery-driver:
              \(id): \(try token(.deliveryDriver))
            trusted-delivery-driver:
              \(id):
                \(id)-task: \(try token(.trustedDeliveryDriver))
            delivery-consumer:
              tracking:
                \(id): \(try token(.deliveryConsumer))
            batch-tasks:
              "\(id)-a,\(id)-b": \(try token(.batchTasks))
            server: \(try token(.server))
            fleet-reader: \(try token(.fleetReader))
            delivery-fleet-reader: \(try token(.deliveryFleetReader))
            """
        )
        let section = """
            type: file
            path: tokens.yaml
            pollInterval: 10ms
            verify:
              - jwksFile: jwks.json
                serviceAccount: \(Fixture.account.clientEmail)
            """
        let conformance = BackendConformance(
            factory: FileTokenSourceFactory(), section: section, directory: fixture.directory,
            invalidSection: (yaml: section.replacingOccurrences(of: "pollInterval: 10ms", with: "pollInterval: 1ms"), key: "pollInterval"),
            clock: fixture.clock.gatewayClock, endWithin: TestTiming.bound(.seconds(5)))
        let violations = await conformance.violations()
        #expect(violations.isEmpty, "\(violations)")
    }
}
