/// How a `StageWorker` consumes its stream.
public struct StageWorkerConfiguration: Sendable {
    /// The input stream.
    public var stream: String
    /// The consumer group, usually the stage's name; also names the worker in logs and metrics.
    public var group: String
    /// This replica's consumer name; must be unique within the group.
    public var consumer: String
    /// Most entries per batch (one read, one transaction).
    public var batchSize = 100
    /// How long a read waits for new entries; keeps shutdown prompt when short.
    public var blockMilliseconds = 1000
    /// Pending longer than this (dead consumer) is claimed.
    public var claimIdleMilliseconds = 30_000
    /// How often to look for stale pending entries.
    public var claimIntervalMilliseconds = 5_000
    /// Failures before dead-lettering.
    public var maxAttempts = 3
    /// Where poison entries go, with their error text; defaults to `<group>:dead`.
    public var deadLetterStream: String
    /// How many times a batch is redone after a WATCHed key changed before its entries count as failed.
    public var maxConflictRetries = 16
    /// Acknowledged entries older than this are trimmed from the input stream (nil: never).
    public var retentionMilliseconds: UInt64? = 86_400_000
    /// How often the worker trims its input stream.
    public var trimIntervalMilliseconds = 10_000
    /// Streams the stage writes that no group reads (the verifier's `rejected`): without a reader to
    /// wait for, they are trimmed by the retention alone, or they would grow forever.
    public var unreadOutputs: [String] = []

    /// A configuration with defaults for everything but the names.
    public init(stream: String, group: String, consumer: String) {
        self.stream = stream
        self.group = group
        self.consumer = consumer
        self.deadLetterStream = "\(group):dead"
    }
}
