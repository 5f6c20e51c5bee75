import NIOCore
import NIOPosix
import Synchronization
import TokenGateCore

/// Limit checks asked on one event loop during one turn of it, sent as one script call when the turn ends.
///
/// Under load a turn of the loop reads many requests; one `EVALSHA` for all their checks costs the gateway one
/// command to write and one reply to read, and Redis one script call, instead of one of each per request. The
/// requests stay apart in the script (``RedisScripts/acquireBatch``): each one's buckets are charged in order,
/// atomically, as if it had its own call.
final class RedisLimitBatches: Sendable {
    typealias Completion = @Sendable (Result<SharedRateOutcome, any Error>) -> Void

    /// One request's check.
    struct Check: Sendable {
        let buckets: [SharedRateBucket]
        let completion: Completion
    }

    private let batches = Mutex<[ObjectIdentifier: Batch]>([:])

    /// The checks gathered on one loop: touched on that loop's thread only (``add(_:send:)`` runs there, and so
    /// does the task it queues), so the lock guards the table alone.
    private final class Batch: @unchecked Sendable {
        var checks: [Check] = []
    }

    /// Adds `check` to the current event loop's batch; the first check of a turn queues `send`, which gets the
    /// whole batch when the loop has run what is queued on it now. False when this thread is no event loop.
    func add(_ check: Check, send: @escaping @Sendable ([Check]) -> Void) -> Bool {
        guard let loop = MultiThreadedEventLoopGroup.currentEventLoop else { return false }
        let batch = batches.withLock { batches in
            if let batch = batches[ObjectIdentifier(loop)] { return batch }
            let batch = Batch()
            batches[ObjectIdentifier(loop)] = batch
            return batch
        }
        if batch.checks.isEmpty {
            loop.execute {
                let checks = batch.checks
                batch.checks = []
                send(checks)
            }
        }
        batch.checks.append(check)
        return true
    }
}
