/// What a ``RetryingExchange`` does with time besides waiting on the network: sleeping between attempts and picking
/// a jitter factor. Injectable, so tests don't wait out real backoff (timeouts stay real: the network is).
package struct RetryTiming: Sendable {
    /// Sleeps between attempts; throws when the task is cancelled.
    package var sleep: @Sendable (Duration) async throws -> Void
    /// A jitter factor in `0...1`.
    package var jitter: @Sendable () -> Double

    /// Timing from `sleep` and `jitter`.
    package init(sleep: @escaping @Sendable (Duration) async throws -> Void, jitter: @escaping @Sendable () -> Double) {
        self.sleep = sleep
        self.jitter = jitter
    }

    /// Real sleeping and random jitter.
    package static let live = RetryTiming(
        sleep: { try await Task.sleep(for: $0) },
        jitter: { Double.random(in: 0...1) }
    )
}
