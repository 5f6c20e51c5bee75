import NIOCore

/// Runs a task's jobs on one event loop.
///
/// A mint that ``CachedTokenHandler`` starts runs here, on the loop that writes its answer: on the cooperative
/// pool it would cost two thread hops per mint (loop → pool → loop), each a wake-up and a context switch. Default
/// actors and nonisolated async code the mint awaits run here too (SE-0417); a wait for another loop's I/O (an
/// upstream, Redis) resumes here.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
