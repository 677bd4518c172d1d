import NIOCore

/// Runs a task's jobs on one NIO event loop (Swift's `TaskExecutor`, preferred with
/// `withTaskExecutorPreference`). Default actors the task calls run there too (SE-0417).
public final class EventLoopTaskExecutor: TaskExecutor {
    public let eventLoop: any EventLoop

    public init(_ eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
