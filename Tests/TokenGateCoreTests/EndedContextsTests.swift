import Testing
import TokenGateCore

@Suite struct EndedContextsTests {
    static let provider = ProviderID("acme-rides")!
    static let other = ProviderID("other-fleet")!
    static func key(_ type: TokenType, _ id: String, of provider: ProviderID = provider) -> EndedContexts.Key {
        EndedContexts.Key(provider: provider, tokenType: type, id: ContextID(id)!)!
    }
    static func end(until: Int64, _ origin: EndedContexts.Origin = .operator) -> EndedContexts.Record {
        EndedContexts.Record(until: until, origin: origin)
    }

    @Test func endingADeliveryVehicleRefusesBothItsDriversTokens() throws {
        let ended = EndedContexts()
        try ended.end(Self.key(.trustedDeliveryDriver, "van-7"), Self.end(until: 2000), now: 1000)
        let van = ContextID("van-7")!
        #expect(ended.isEnded(.deliveryVehicle(van), provider: Self.provider, now: 1500))
        #expect(ended.isEnded(.trustedDeliveryVehicle(van, task: .all), provider: Self.provider, now: 1500))
        #expect(!ended.isEnded(.vehicle(van), provider: Self.provider, now: 1500))
        #expect(!ended.isEnded(.deliveryVehicle(van), provider: Self.other, now: 1500))
        // Expired: served again, and the entry is gone.
        #expect(!ended.isEnded(.deliveryVehicle(van), provider: Self.provider, now: 2000))
        #expect(ended.entryCount == 0)
    }

    @Test func batchesAndWholeFleetsNameNothingToEnd() {
        for type in [TokenType.batchTasks, .fleetReader, .deliveryFleetReader, .server] {
            #expect(EndedContexts.Key(provider: Self.provider, tokenType: type, id: ContextID("x")!) == nil)
        }
    }

    /// On a gateway alone the list is the truth: an end that does not fit is refused, never one that still holds
    /// dropped (its context would be served again); expired ones make room.
    @Test func aFullListRefusesNewEndsAndDropsNothingBeforeItExpires() throws {
        let ended = EndedContexts(capacity: 3)
        for (index, trip) in ["a", "b", "c"].enumerated() {
            try ended.end(Self.key(.consumer, trip), Self.end(until: 2000 + Int64(index)), now: 1000)
        }
        #expect(throws: EndedContexts.Refusal.full(capacity: 3)) {
            try ended.end(Self.key(.consumer, "d"), Self.end(until: 2003), now: 1000)
        }
        #expect(ended.endedUntil(Self.key(.consumer, "a"), now: 1000) == 2000)
        #expect(ended.endedUntil(Self.key(.consumer, "d"), now: 1000) == nil)
        // Ending one already held again is no new entry.
        try ended.end(Self.key(.consumer, "b"), Self.end(until: 2500), now: 1000)
        #expect(ended.endedUntil(Self.key(.consumer, "b"), now: 1000) == 2500)
        // Once "a" expires there is room.
        try ended.end(Self.key(.consumer, "d"), Self.end(until: 3000), now: 2000)
        #expect(ended.entryCount == 3)
        #expect(ended.lift(Self.key(.consumer, "d"), now: 2000) == .lifted)
        #expect(ended.lift(Self.key(.consumer, "d"), now: 2000) == .notEnded)
    }

    /// Each provider has a list of its own: one tenant ending many contexts never refuses nor drops another's.
    @Test func oneProviderFillingItsListLeavesAnothersAlone() throws {
        let ended = EndedContexts(capacity: 100)
        try ended.end(Self.key(.consumer, "kept", of: Self.other), Self.end(until: 5000), now: 1000)
        for trip in 0..<100 { try ended.end(Self.key(.consumer, "flood-\(trip)"), Self.end(until: 5000), now: 1000) }
        #expect(throws: EndedContexts.Refusal.full(capacity: 100)) {
            try ended.end(Self.key(.consumer, "one-more"), Self.end(until: 5000), now: 1000)
        }
        #expect(ended.endedUntil(Self.key(.consumer, "kept", of: Self.other), now: 1000) == 5000)
        try ended.end(Self.key(.consumer, "new", of: Self.other), Self.end(until: 5000), now: 1000)
        #expect(ended.entryCount(of: Self.other) == 2)
        #expect(ended.entryCount(of: Self.provider) == 100)
    }

    /// A replica's copy of a shared store's list makes room by dropping the oldest end it learned (the store still
    /// refuses that context at its next mint), never one of its own the store has not taken.
    @Test func aReplicasCopyDropsTheOldestUnpinnedEnd() throws {
        let ended = EndedContexts(capacity: 2, evictsWhenFull: true)
        try ended.end(Self.key(.consumer, "mine"), Self.end(until: 2000), now: 1000, pinned: true)
        try ended.end(Self.key(.consumer, "learned-1"), Self.end(until: 2001), now: 1000)
        try ended.end(Self.key(.consumer, "learned-2"), Self.end(until: 2002), now: 1000)
        #expect(ended.endedUntil(Self.key(.consumer, "mine"), now: 1000) == 2000)
        #expect(ended.endedUntil(Self.key(.consumer, "learned-1"), now: 1000) == nil)
        #expect(ended.endedUntil(Self.key(.consumer, "learned-2"), now: 1000) == 2002)
        // With every entry pinned, nothing may go.
        try ended.end(Self.key(.consumer, "mine-2"), Self.end(until: 2003), now: 1000, pinned: true)
        #expect(throws: EndedContexts.Refusal.full(capacity: 2)) {
            try ended.end(Self.key(.consumer, "mine-3"), Self.end(until: 2004), now: 1000, pinned: true)
        }
        ended.unpin(Self.key(.consumer, "mine"))
        try ended.end(Self.key(.consumer, "mine-3"), Self.end(until: 2004), now: 1000, pinned: true)
        #expect(ended.endedUntil(Self.key(.consumer, "mine"), now: 1000) == nil)
        // After a missed message what was learned is forgotten; what the store never took stays.
        ended.forgetUnpinned()
        #expect(ended.endedUntil(Self.key(.consumer, "mine-2"), now: 1000) == 2003)
        #expect(ended.endedUntil(Self.key(.consumer, "mine-3"), now: 1000) == 2004)
    }

    /// An event lifts only what an event ended, and only when it is newer than that end; an operator lifts anything.
    @Test func anEventLiftsOnlyAnOlderEventsEnd() throws {
        let ended = EndedContexts()
        let vehicle = Self.key(.driver, "v-1")
        try ended.end(vehicle, Self.end(until: 9000, .operator), now: 1000)
        #expect(ended.lift(vehicle, by: .event(at: 5_000_000), now: 1000) == .kept(Self.end(until: 9000, .operator)))
        // An event's end never weakens an operator's.
        #expect(try ended.end(vehicle, Self.end(until: 9500, .event(at: 1_000_000)), now: 1000) == Self.end(until: 9500, .operator))
        #expect(ended.lift(vehicle, now: 1000) == .lifted)

        try ended.end(vehicle, Self.end(until: 9000, .event(at: 2_000_000)), now: 1000)
        // A lift logged before the end (delivered late) leaves it; one logged after lifts it.
        #expect(ended.lift(vehicle, by: .event(at: 1_999_999), now: 1000) == .kept(Self.end(until: 9000, .event(at: 2_000_000))))
        #expect(ended.lift(vehicle, by: .event(at: 2_000_001), now: 1000) == .lifted)
        #expect(ended.lift(vehicle, by: .event(at: 2_000_002), now: 1000) == .notEnded)
    }
}
