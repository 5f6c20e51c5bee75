import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

@Suite struct DistinctContextCounterTests {
    // A whole hour, so windows line up with the test's arithmetic.
    let clock = ManualClock(wallSeconds: 1_800_000_000)
    static let acme = ProviderID("acme-rides")!

    static func caller(_ name: String, subject: String? = nil) -> AuthenticatedCaller {
        AuthenticatedCaller(provider: acme, name: name, kind: subject == nil ? .apiKey : .sessionToken, subject: subject, grants: [:])
    }

    static func trip(_ id: String) -> TokenContext { .trip(ContextID(id)!) }
    static func vehicle(_ id: String) -> TokenContext { .vehicle(ContextID(id)!) }

    func counter(_ limits: DistinctContextLimits) -> DistinctContextCounter { DistinctContextCounter(limits, clock: clock.gatewayClock) }

    @Test func newContextsPastTheCapAreRefusedUntilTheWindowEndsAndCountedOnesAreFree() {
        let counter = counter(DistinctContextLimits(perCaller: .init(count: 2, windowSeconds: 3_600)))
        let dispatch = Self.caller("dispatch")
        #expect(counter.admit(Self.trip("t1"), for: dispatch) == .allowed)
        #expect(counter.admit(Self.trip("t2"), for: dispatch) == .allowed)
        #expect(counter.admit(Self.trip("t1"), for: dispatch) == .allowed)
        clock.advance(by: .seconds(600))
        #expect(counter.admit(Self.trip("t3"), for: dispatch) == .refused(scope: "all", retryAfterSeconds: 3_000))
        // Each caller (client and session subject) counts apart.
        #expect(counter.admit(Self.trip("t3"), for: Self.caller("dispatch", subject: "rider-1")) == .allowed)
        #expect(counter.admit(Self.trip("t3"), for: Self.caller("other")) == .allowed)
        // The next window starts empty.
        clock.advance(by: .seconds(3_000))
        #expect(counter.admit(Self.trip("t3"), for: dispatch) == .allowed)
        #expect(counter.admit(Self.trip("t4"), for: dispatch) == .allowed)
        #expect(counter.admit(Self.trip("t5"), for: dispatch) == .refused(scope: "all", retryAfterSeconds: 3_600))
    }

    @Test func aPerTypeCapCountsOnlyItsTypeAndARefusalCountsInNoCap() {
        let limits = DistinctContextLimits(perCaller: .init(count: 3, windowSeconds: 3_600), perType: [.driver: .init(count: 1, windowSeconds: 60)])
        let counter = counter(limits)
        let dispatch = Self.caller("dispatch")
        #expect(counter.admit(Self.vehicle("v1"), for: dispatch) == .allowed)
        #expect(counter.admit(Self.vehicle("v2"), for: dispatch) == .refused(scope: "driver", retryAfterSeconds: 60))
        // v2 was refused by the driver cap, so the overall cap did not count it: two trips still fit.
        #expect(counter.admit(Self.trip("t1"), for: dispatch) == .allowed)
        #expect(counter.admit(Self.trip("t2"), for: dispatch) == .allowed)
        #expect(counter.admit(Self.trip("t3"), for: dispatch) == .refused(scope: "all", retryAfterSeconds: 3_600))
        // A new minute frees the driver cap, but the hour's overall cap is full.
        clock.advance(by: .seconds(60))
        #expect(counter.admit(Self.vehicle("v2"), for: dispatch) == .refused(scope: "all", retryAfterSeconds: 3_540))
        #expect(counter.admit(Self.vehicle("v1"), for: dispatch) == .allowed)
    }

    @Test func callersAreBoundedLeastRecentlyUsedFirstOut() {
        let limits = DistinctContextLimits(perCaller: .init(count: 1, windowSeconds: 3_600))
        let counter = DistinctContextCounter(limits, clock: clock.gatewayClock, maxCallers: 2)
        for name in ["a", "b", "c", "d"] { #expect(counter.admit(Self.trip("t1"), for: Self.caller(name)) == .allowed) }
        #expect(counter.trackedCallers == 2)
    }
}
