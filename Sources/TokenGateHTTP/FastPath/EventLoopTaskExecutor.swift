import NIOCore

/// Runs tasks on one event loop: a task that prefers it (`Task(executorPreference:)`) runs its jobs there, between
/// the loop's I/O, instead of on the global executor.
///
/// The fast path starts a miss's task with its connection's loop, and the fetch the cache starts from it too
/// (``TokenCacheFetches/executor``): the mint's signature is made on the loop that read the request, as a TLS
/// handshake's is by swift-nio-ssl, and the answer written from there. No job crosses to another thread and back,
/// and no sleeping thread is woken for it (Benchmarks/load/README.md counts the context switches per mint, either way).
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
