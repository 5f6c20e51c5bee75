internal import Foundation

/// Waits for a fetch shared by many callers: a cancelled caller stops waiting at once with `CancellationError`,
/// while the fetch goes on for the others (and still fills the cache).
enum CancellableWait {
    static func value<Value: Sendable>(of task: Task<Value, any Error>) async throws -> Value {
        let slot = Slot<Value>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                slot.install(continuation)
                Task { slot.resume(with: await task.result) }
            }
        } onCancel: {
            slot.resume(with: .failure(CancellationError()))
        }
    }

    /// One continuation, resumed exactly once by whichever comes first: the result or the cancellation (which may
    /// even precede `install`). `@unchecked` because every field is guarded by `lock` (`Mutex` needs iOS 18).
    private final class Slot<Value: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<Value, any Error>?
        private var early: Result<Value, any Error>?
        private var isDone = false

        func install(_ continuation: CheckedContinuation<Value, any Error>) {
            let early: Result<Value, any Error>? = lock.withLock {
                if let early = self.early { return early }
                self.continuation = continuation
                return nil
            }
            if let early { continuation.resume(with: early) }
        }

        func resume(with result: Result<Value, any Error>) {
            let continuation: CheckedContinuation<Value, any Error>? = lock.withLock {
                guard !isDone else { return nil }
                isDone = true
                guard let continuation = self.continuation else {
                    early = result
                    return nil
                }
                self.continuation = nil
                return continuation
            }
            continuation?.resume(with: result)
        }
    }
}
