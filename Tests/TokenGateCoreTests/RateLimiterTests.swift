import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

@Suite struct RateLimiterTests {
    let clock = ManualClock(wallSeconds: 1_700_000_000)

    func makeLimiter(_ limit: RateLimit = RateLimit(count: 600, per: .seconds(60), burst: 50), maxKeys: Int = 1_000)
        -> RateLimiter<String>
    {
        RateLimiter(limit: limit, maxKeys: maxKeys, clock: clock.gatewayClock)
    }

    @Test func allowsTheBurstThenLimitsWithRetryAfterOneInterval() {
        let limiter = makeLimiter()
        for _ in 0..<50 { #expect(limiter.acquire("caller") == .allowed) }
        let decision = limiter.acquire("caller")
        #expect(decision == .limited(retryAfter: .milliseconds(100)))  // 600/min: one every 100 ms
        #expect(decision.retryAfterSeconds == 1)
        #expect(!decision.isAllowed)
    }

    /// What the `RateLimit` header reports: requests left back to back, and time until the burst is whole again.
    @Test func aMeasuredAcquireTellsWhatIsLeftAndWhenTheBucketIsFull() {
        let limiter = makeLimiter(RateLimit(count: 60, per: .seconds(60), burst: 3))
        #expect(limiter.acquireMeasured("caller") == RateLimitQuota(decision: .allowed, remaining: 2, resetNanoseconds: 1_000_000_000))
        #expect(limiter.acquireMeasured("caller").remaining == 1)
        #expect(limiter.acquireMeasured("caller") == RateLimitQuota(decision: .allowed, remaining: 0, resetNanoseconds: 3_000_000_000))
        let refused = limiter.acquireMeasured("caller")
        #expect(refused.decision == .limited(retryAfter: .seconds(1)) && refused.remaining == 0)
        clock.advance(by: .milliseconds(1_500))
        // One and a half intervals later: one request is back, the whole burst in another 1.5 s.
        #expect(limiter.acquireMeasured("other").remaining == 2)
        #expect(limiter.acquireMeasured("caller") == RateLimitQuota(decision: .allowed, remaining: 0, resetNanoseconds: 2_500_000_000))
    }

    @Test func refillsAtTheSustainedRate() {
        let limiter = makeLimiter()
        for _ in 0..<50 { _ = limiter.acquire("caller") }

        clock.advance(by: .milliseconds(40))
        #expect(limiter.acquire("caller") == .limited(retryAfter: .milliseconds(60)))
        clock.advance(by: .milliseconds(60))
        #expect(limiter.acquire("caller") == .allowed)
        #expect(limiter.acquire("caller") == .limited(retryAfter: .milliseconds(100)))

        clock.advance(by: .seconds(10))  // long enough to be full again: exactly one burst passes
        let allowed = (0..<60).filter { _ in limiter.acquire("caller").isAllowed }.count
        #expect(allowed == 50)
    }

    @Test func aSlowLimitReportsRetryAfterInWholeSeconds() {
        let limiter = makeLimiter(RateLimit(count: 1, per: .seconds(60)))
        #expect(limiter.acquire("caller") == .allowed)
        #expect(limiter.acquire("caller").retryAfterSeconds == 60)
        clock.advance(by: .milliseconds(59_500))
        #expect(limiter.acquire("caller") == .limited(retryAfter: .milliseconds(500)))
        #expect(limiter.acquire("caller").retryAfterSeconds == 1)
        clock.advance(by: .milliseconds(500))
        #expect(limiter.acquire("caller") == .allowed)
    }

    @Test func keysAreIndependent() {
        let limiter = makeLimiter(RateLimit(count: 1, per: .seconds(1), burst: 2))
        #expect(limiter.acquire("a") == .allowed)
        #expect(limiter.acquire("a") == .allowed)
        #expect(!limiter.acquire("a").isAllowed)
        #expect(limiter.acquire("b") == .allowed)
        #expect(limiter.acquire("b") == .allowed)
        #expect(!limiter.acquire("b").isAllowed)
        #expect(limiter.trackedKeyCount == 2)
    }

    @Test func idleBucketsAreDroppedAsRequestsArrive() {
        let limiter = makeLimiter()
        for index in 0..<20 { _ = limiter.acquire("caller-\(index)") }
        #expect(limiter.trackedKeyCount == 20)
        clock.advance(by: .milliseconds(100))  // every bucket is full again, so equivalent to no bucket
        #expect(limiter.acquire("newcomer") == .allowed)
        #expect(limiter.trackedKeyCount == 1)
    }

    @Test func aSweepDropsIdleBucketsAndKeepsBusyOnes() {
        let limiter = makeLimiter()
        for _ in 0..<50 { _ = limiter.acquire("busy") }  // full again only after 5 s
        for index in 0..<10 { _ = limiter.acquire("idle-\(index)") }
        clock.advance(by: .seconds(1))
        #expect(limiter.removeIdleBuckets() == 10)
        #expect(limiter.trackedKeyCount == 1)
        // The busy bucket kept its state: 10 intervals refilled, 10 requests pass.
        let allowed = (0..<20).filter { _ in limiter.acquire("busy").isAllowed }.count
        #expect(allowed == 10)
    }

    @Test func maxKeysCapsTheTableByDroppingTheLeastRecentlyUsedBucket() {
        let limiter = makeLimiter(RateLimit(count: 1, per: .seconds(60)), maxKeys: 3)
        for key in ["a", "b", "c"] { #expect(limiter.acquire(key) == .allowed) }
        #expect(!limiter.acquire("a").isAllowed)  // touches a: b is now least recently used
        #expect(limiter.acquire("d") == .allowed)
        #expect(limiter.trackedKeyCount == 3)
        #expect(!limiter.acquire("a").isAllowed)
        #expect(!limiter.acquire("c").isAllowed)
        #expect(limiter.acquire("b") == .allowed)  // forgotten, so it starts with a fresh burst
        #expect(limiter.trackedKeyCount == 3)
    }

    @Test func concurrentAcquisitionsNeverExceedTheBurst() async {
        let limiter = makeLimiter()
        let allowed = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask { (0..<100).filter { _ in limiter.acquire("shared").isAllowed }.count }
            }
            return await group.reduce(0, +)
        }
        #expect(allowed == 50)
    }

    /// A refusal's log reason names the limit by its metric label; the literal costs a refusal no string building.
    @Test(arguments: ProviderMetrics.RateLimitScope.allCases)
    func aRefusalsReasonNamesItsLimit(scope: ProviderMetrics.RateLimitScope) {
        #expect(scope.refusalReason == "\(scope.rawValue) rate limit reached")
    }

    /// The `RateLimit` value: the policy's name, what remains, and the whole seconds until it is whole again.
    @Test(arguments: [
        ("caller", 0, UInt64(0), #""caller";r=0;t=0"#), ("caller", 7, 1, #""caller";r=7;t=1"#),
        ("context", 12, 2_000_000_000, #""context";r=12;t=2"#), ("context", 3, 2_000_000_001, #""context";r=3;t=3"#),
        ("provider", 1_000_000, 3_599_999_999_999, #""provider";r=1000000;t=3600"#),
        ("p", -1, UInt64.max, #""p";r=-1;t=18446744074"#), ("p", Int.max, 10, #""p";r=9223372036854775807;t=1"#),
    ])
    func theRateLimitStatusValue(name: String, remaining: Int, resetNanoseconds: UInt64, value: String) {
        #expect(RateLimitHeaders.status(name, remaining: remaining, resetNanoseconds: resetNanoseconds) == value)
    }
}
