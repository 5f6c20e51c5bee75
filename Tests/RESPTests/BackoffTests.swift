import Testing

@testable import RESP

/// The wait between failed connection attempts: doubling, capped, jittered within the upper half.
@Suite struct BackoffTests {
    @Test(arguments: [(1, 100), (2, 200), (3, 400), (4, 800), (5, 1000), (40, 1000), (Int.max, 1000)])
    func eachWaitIsInTheUpperHalfOfItsCeiling(failures: Int, ceilingMilliseconds: Int) {
        let backoff = RESPConfiguration.Backoff(initial: .milliseconds(100), maximum: .seconds(1))
        let ceiling = Duration.milliseconds(ceilingMilliseconds)
        for _ in 0..<100 {
            let delay = backoff.delay(afterFailures: failures)
            #expect(delay >= ceiling / 2 && delay <= ceiling, "\(delay) after \(failures) failures")
        }
    }

    /// Jitter: replicas that failed together do not all retry at the same instant.
    @Test func waitsAreSpreadOut() {
        let backoff = RESPConfiguration.Backoff(initial: .milliseconds(100), maximum: .seconds(1))
        let delays = Set((0..<50).map { _ in backoff.delay(afterFailures: 3) })
        #expect(delays.count > 10)
    }
}
