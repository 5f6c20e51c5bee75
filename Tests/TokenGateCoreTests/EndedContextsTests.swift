import Testing
import TokenGateCore

@Suite struct EndedContextsTests {
    static let provider = ProviderID("acme-rides")!
    static func key(_ type: TokenType, _ id: String) -> EndedContexts.Key {
        EndedContexts.Key(provider: provider, tokenType: type, id: ContextID(id)!)!
    }

    @Test func endingADeliveryVehicleRefusesBothItsDriversTokens() throws {
        let ended = EndedContexts()
        ended.end(Self.key(.trustedDeliveryDriver, "van-7"), until: 2000, now: 1000)
        let van = ContextID("van-7")!
        #expect(ended.isEnded(.deliveryVehicle(van), provider: Self.provider, now: 1500))
        #expect(ended.isEnded(.trustedDeliveryVehicle(van, task: .all), provider: Self.provider, now: 1500))
        #expect(!ended.isEnded(.vehicle(van), provider: Self.provider, now: 1500))
        #expect(!ended.isEnded(.deliveryVehicle(van), provider: ProviderID("other-fleet")!, now: 1500))
        // Expired: served again, and the entry is gone.
        #expect(!ended.isEnded(.deliveryVehicle(van), provider: Self.provider, now: 2000))
        #expect(ended.entryCount == 0)
    }

    @Test func batchesAndWholeFleetsNameNothingToEnd() {
        for type in [TokenType.batchTasks, .fleetReader, .deliveryFleetReader, .server] {
            #expect(EndedContexts.Key(provider: Self.provider, tokenType: type, id: ContextID("x")!) == nil)
        }
    }

    @Test func theListIsBoundedDroppingTheSoonestToExpire() {
        let ended = EndedContexts(capacity: 3)
        for (index, trip) in ["a", "b", "c", "d"].enumerated() {
            ended.end(Self.key(.consumer, trip), until: 2000 + Int64(index), now: 1000)
        }
        #expect(ended.entryCount == 3)
        #expect(ended.endedUntil(Self.key(.consumer, "a"), now: 1000) == nil)
        #expect(ended.endedUntil(Self.key(.consumer, "d"), now: 1000) == 2003)
        #expect(ended.lift(Self.key(.consumer, "d"), now: 1000))
        #expect(!ended.lift(Self.key(.consumer, "d"), now: 1000))
    }
}
