import Testing
import TokenGateCore

@Suite struct RateLimitTests {
    @Test(arguments: [
        ("600/min", 600, Duration.seconds(60)),
        ("10/s", 10, .seconds(1)),
        ("10/sec", 10, .seconds(1)),
        ("1/min", 1, .seconds(60)),
        ("3600/h", 3_600, .seconds(3_600)),
        ("5/hour", 5, .seconds(3_600)),
        ("007/s", 7, .seconds(1)),
    ])
    func parsesConfigNotation(text: String, count: Int, period: Duration) {
        #expect(RateLimit(parsing: text, burst: 50) == RateLimit(count: count, per: period, burst: 50))
    }

    @Test(arguments: [
        "", "600", "600/", "/min", "0/min", "-1/s", "+5/s", "1e3/s", "10/day", "10/MIN", "10/m", "10/seconds",
        " 10/s", "10/s ", "10 / s", "10/s/s", "1_000/s", "99999999999999999999/s", "2000000000/s", "١٠/s",
    ])
    func rejectsAnythingElse(text: String) {
        #expect(RateLimit(parsing: text) == nil)
    }

    @Test(arguments: [0, -1])
    func rejectsABurstBelowOne(burst: Int) {
        #expect(RateLimit(parsing: "10/s", burst: burst) == nil)
    }

    @Test func describesItselfInConfigNotation() {
        #expect(RateLimit(count: 600, per: .seconds(60), burst: 50).description == "600/min burst 50")
        #expect(RateLimit(parsing: "5/hour")?.description == "5/h burst 1")
    }

    @Test(arguments: [
        (Duration.milliseconds(1), 1), (.milliseconds(999), 1), (.seconds(1), 1), (.milliseconds(1_001), 2),
        (.seconds(60), 60), (.zero, 1),
    ])
    func retryAfterSecondsRoundsUpToAtLeastOne(retryAfter: Duration, seconds: Int) {
        #expect(RateLimitDecision.limited(retryAfter: retryAfter).retryAfterSeconds == seconds)
        #expect(RateLimitDecision.allowed.retryAfterSeconds == nil)
    }
}
