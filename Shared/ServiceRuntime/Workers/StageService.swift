import RedisStreams
import ServiceLifecycle

/// Runs a stage's consumer loop as a lifecycle service: on SIGTERM it stops reading, finishes and
/// acknowledges the batch in hand, and returns.
public struct StageService<Stage: StreamStage>: Service {
    let worker: StageWorker<Stage>

    public init(worker: StageWorker<Stage>) { self.worker = worker }

    public func run() async throws {
        try await cancelWhenGracefulShutdown { try await worker.run() }
    }
}

/// Runs a delayed queue's timer loop as a lifecycle service.
public struct DelayedQueueService: Service {
    let pump: DelayedQueuePump

    public init(pump: DelayedQueuePump) { self.pump = pump }

    public func run() async throws {
        try await cancelWhenGracefulShutdown { try await pump.run() }
    }
}
