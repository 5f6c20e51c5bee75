import Foundation

/// How much slower than a plain debug build this test run is. `scripts/sanitize` sets `TOKENGATE_TEST_SLOWDOWN`
/// (ThreadSanitizer runs code 5 to 15 times slower, and CI runs it beside the rest of its suites on two cores).
///
/// A bound that a test asserts as behaviour, such as "every replica refuses an ended trip within a second", is
/// multiplied by it: a sanitizer run then checks the behaviour, not the speed of its instrumentation, and a plain
/// run checks the bound as the documentation states it.
package enum TestTiming {
    /// 1 unless the environment says otherwise; a value that is not a whole number of at least 1 counts as 1.
    package static let slowdown: Int = {
        guard let text = ProcessInfo.processInfo.environment["TOKENGATE_TEST_SLOWDOWN"], let value = Int(text) else {
            return 1
        }
        return max(1, value)
    }()

    /// `bound` as it holds in this run.
    package static func bound(_ bound: Duration) -> Duration { bound * slowdown }
}
