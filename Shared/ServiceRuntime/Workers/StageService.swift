import RedisStreams
import ServiceLifecycle

/// Runs a stage's consumer loop as a lifecycle service: on SIGTERM it stops reading, finishes and
/// acknowledges the batch in hand, and returns.
public struct StageService<Stage: StreamStage>: Service, ConsumerGroupService {
    let worker: StageWorker<Stage>

    public var consumerGroups: [(stream: String, group: String)] {
        worker.configuration.partitions.map { ($0.stream, worker.configuration.group) }
    }

    public init(worker: StageWorker<Stage>) { self.worker = worker }

    public func run() async throws {
        try await cancelWhenGracefulShutdown { try await worker.run() }
    }
}

/// A service that reads streams (one per partition) as a consumer group: `/ready` checks each group exists.
public protocol ConsumerGroupService {
    var consumerGroups: [(stream: String, group: String)] { get }
}

/// Runs a delayed queue's timer loop as a lifecycle service.
public struct DelayedQueueService: Service {
    let pump: DelayedQueuePump

    public init(pump: DelayedQueuePump) { self.pump = pump }

    public func run() async throws {
        try await cancelWhenGracefulShutdown { try await pump.run() }
    }
}
