import Foundation
import Synchronization
import TokenGateClient
import TokenGateTesting

/// The client's clock over the gateway's ManualClock: one time source for both sides. Sleeping advances the shared
/// clock instead of waiting, so Retry-After and backoff waits are instant and recorded.
final class ManualTokenClock: TokenClock {
    let manual: ManualClock
    private let recorded = Mutex<[TimeInterval]>([])

    init(_ manual: ManualClock) {
        self.manual = manual
    }

    var now: Date { Date(timeIntervalSince1970: TimeInterval(manual.now)) }

    /// Every wait the client asked for, in order.
    var sleeps: [TimeInterval] { recorded.withLock { $0 } }

    func sleep(for seconds: TimeInterval) async throws {
        try Task.checkCancellation()
        recorded.withLock { $0.append(seconds) }
        manual.advance(by: .milliseconds(Int64((max(0, seconds) * 1000).rounded())))
    }
}
