/// The two things an upstream call does with time besides waiting on the network: sleeping between attempts and
/// picking a jitter factor. Injectable so tests don't wait out real backoff (timeouts stay real: the network is).
struct UpstreamTiming: Sendable {
    /// Sleeps between attempts; throws when the task is cancelled.
    var sleep: @Sendable (Duration) async throws -> Void
    /// A jitter factor in `0...1`.
    var jitter: @Sendable () -> Double

    /// Real sleeping and random jitter.
    static let live = UpstreamTiming(
        sleep: { try await Task.sleep(for: $0) },
        jitter: { Double.random(in: 0...1) }
    )
}
