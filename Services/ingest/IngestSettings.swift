import AttributionModel
import PipelineCatalog
import ServiceRuntime

/// What ingest reads besides `PipelineSettings`.
public struct IngestSettings: Sendable {
    let maxBodyBytes: Int
    var maxBatchBodyBytes = 4_194_304
    /// Connections events are published over; 0: one per HTTP event loop.
    var connections = 0
    /// When ingest refuses work at once.
    var limits = Admission.Limits()
    let signingKeyGrace: Milliseconds
    /// The deployment's partitions: where each event, idempotency record and dead letter lives.
    let partitioning: Partitioning
    /// Replicas to WAIT for before a 202.
    var durability = EventPublisher.Durability()
    /// The service's clock (`receivedAt`, rotations, the JWKS grace, replays): the wall clock unless a
    /// test sets its own.
    public var clock: @Sendable () -> Milliseconds

    init(
        maxBodyBytes: Int, signingKeyGrace: Milliseconds, partitioning: Partitioning = Partitioning(),
        clock: @escaping @Sendable () -> Milliseconds
    ) {
        self.partitioning = partitioning
        self.maxBodyBytes = maxBodyBytes
        self.signingKeyGrace = signingKeyGrace
        self.clock = clock
    }

    public init(
        _ environment: ServiceEnvironment, _ common: PipelineSettings
    ) throws {
        let policy = common.policy
        clock = { WallClock.nowMilliseconds() }
        self.partitioning = common.partitioning
        durability = EventPublisher.Durability(
            replicas: try environment.value(.ingestWaitReplicas).replicas(cluster: common.cluster),
            timeoutMilliseconds: try environment.value(.ingestWaitTimeoutMilliseconds))
        maxBodyBytes = try environment.value(.maxBodyBytes)
        maxBatchBodyBytes = try environment.value(.maxBatchBodyBytes)
        connections = try environment.value(.ingestRedisConnections)
        limits = Admission.Limits(
            maxInFlight: try environment.value(.ingestMaxInFlight),
            queueTarget: .milliseconds(try environment.value(.ingestQueueTargetMilliseconds)),
            maxLag: try environment.value(.ingestMaxEventsLag), callerRate: try environment.value(.ingestCallerRate),
            callerBurst: try environment.value(.ingestCallerBurst))
        signingKeyGrace = KeySetPublication.grace(try environment.value(.signingKeyGraceHours), policy: policy)
    }
}
