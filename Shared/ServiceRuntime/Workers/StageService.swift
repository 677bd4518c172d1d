import RedisStreams
import ServiceLifecycle

/// Runs a stage's consumer loops on one stream as one lifecycle service: on SIGTERM every loop at
/// once stops reading, finishes and acknowledges the batch in hand, and returns. One service for all
/// the loops, not one each: a service group stops its services one after another, and each loop may
/// wait out its blocking read first, so `CONSUMERS` services would take that many reads to stop.
public struct StageService<Stage: StreamStage>: Service, ConsumerGroupService {
    let workers: [StageWorker<Stage>]

    public var consumerGroups: [(stream: String, group: String)] {
        // Every loop's configuration names all of the stream's partitions (each reads its share).
        workers.first.map { worker in worker.configuration.partitions.map { ($0.stream, worker.configuration.group) } } ?? []
    }

    public init(workers: [StageWorker<Stage>]) { self.workers = workers }

    public func run() async throws {
        try await cancelWhenGracefulShutdown {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in workers { group.addTask { try await worker.run() } }
                try await group.waitForAll()
            }
        }
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
