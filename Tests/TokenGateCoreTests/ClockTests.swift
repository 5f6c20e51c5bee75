import Testing
import TokenGateCore
import TokenGateCoreTesting

@Suite struct ClockTests {
    @Test func systemMonotonicClockNeverGoesBackwards() {
        let clock = TokenGateClock.system
        var previous = clock.monotonicNanoseconds()
        for _ in 0..<1_000 {
            let next = clock.monotonicNanoseconds()
            #expect(next >= previous)
            previous = next
        }
    }

    @Test func systemWallClockIsEpochSeconds() {
        let seconds = TokenGateClock.system.wallSeconds()
        #expect(seconds > 1_600_000_000)  // after 2020
        #expect(seconds < 10_000_000_000)  // seconds, not milliseconds
    }

    @Test func manualClockAdvancesBothReadings() {
        let manual = ManualClock(wallSeconds: 100, monotonicNanoseconds: 5)
        manual.advance(by: .milliseconds(2_500))
        #expect(manual.gatewayClock.wallSeconds() == 102)
        #expect(manual.gatewayClock.monotonicNanoseconds() == 2_500_000_005)
    }
}
