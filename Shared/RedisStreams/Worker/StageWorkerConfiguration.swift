/// How a `StageWorker` consumes its streams.
public struct StageWorkerConfiguration: Sendable {
    /// The input streams, one per partition (index = partition), each with its own attempt counts and
    /// dead letters so that everything an entry touches shares its partition's hash slot.
    public var partitions: [StreamPartition]
    /// The consumer group, usually the stage's name; also names the worker in logs and metrics.
    public var group: String
    /// This replica's consumer name; must be unique within the group.
    public var consumer: String
    /// Whether one transaction may span partitions: true on a single Redis, where a read over every
    /// partition's stream becomes batches of up to `batchSize` entries whatever their partition, as
    /// cheap as one stream. False on Redis Cluster, where a transaction must stay in one hash slot, so
    /// each partition's entries are their own batch.
    public var partitionsShareTransactions = true
    /// The partitions (indexes into `partitions`) this worker reads and claims; nil: all. Several
    /// consumer loops of one replica split the partitions this way, so a device's events (one
    /// partition) are still handled in stream order within the replica.
    public var readPartitions: [Int]?
    /// Most entries per batch (one transaction) and per stream read.
    public var batchSize = 100
    /// How long a read waits for new entries; keeps shutdown prompt when short.
    public var blockMilliseconds = 1000
    /// When partitions cannot be read with one blocking read (Redis Cluster: their streams are in
    /// different slots), the longest pause between two rounds of non-blocking reads once everything
    /// is idle; the pause starts at 1 ms after a read that found work and doubles up to this.
    public var idlePollMilliseconds = 100
    /// After a read that found fewer than `batchSize` entries, how long to let more arrive before the
    /// next read: a worker that keeps up would otherwise read (and commit) a handful of entries at a
    /// time, paying a read's and a transaction's fixed cost for each handful. Bounded latency (this
    /// much per stage) for larger batches under load; an idle worker still wakes the moment an entry
    /// arrives (its read blocks).
    public var lingerMilliseconds = 5
    /// Pending longer than this (dead consumer) is claimed.
    public var claimIdleMilliseconds = 30_000
    /// How often to look for stale pending entries.
    public var claimIntervalMilliseconds = 5_000
    /// Failures before dead-lettering.
    public var maxAttempts = 3
    /// How many times a batch is redone after a WATCHed key changed before its entries count as failed.
    public var maxConflictRetries = 16
    /// Acknowledged entries older than this are trimmed from the input streams (nil: never).
    public var retentionMilliseconds: UInt64? = 86_400_000
    /// How long the dead letters are kept (by age alone); nil keeps them forever.
    public var deadLetterRetentionMilliseconds: UInt64? = 30 * 86_400_000
    /// How often the worker trims its input streams.
    public var trimIntervalMilliseconds = 10_000
    /// Streams the stage writes that no group reads (the verifier's `rejected`): without a reader to
    /// wait for, they are trimmed by the retention alone, or they would grow forever.
    public var unreadOutputs: [String] = []

    /// One stream (one partition) with defaults for everything but the names: attempt counts in
    /// `<group>:attempts`, dead letters in `<group>:dead`.
    public init(stream: String, group: String, consumer: String) {
        self.init(
            group: group, consumer: consumer,
            partitions: [StreamPartition(stream: stream, attemptsKey: "\(group):attempts", deadLetterStream: "\(group):dead")])
    }

    /// Several partitions' streams read by one consumer group (`partitions` must not be empty).
    public init(group: String, consumer: String, partitions: [StreamPartition]) {
        precondition(!partitions.isEmpty, "a stage worker needs at least one stream")
        self.group = group
        self.consumer = consumer
        self.partitions = partitions
    }

    /// The first partition's stream: the name logs and single-stream callers use.
    public var stream: String { partitions[0].stream }

    /// The indexes of the partitions this worker reads and claims.
    var readIndices: [Int] { readPartitions ?? Array(partitions.indices) }
}

/// One partition's input stream of a stage, with the keys the worker keeps beside it.
public struct StreamPartition: Sendable, Hashable {
    /// The input stream.
    public var stream: String
    /// HASH entry id → failed attempts.
    public var attemptsKey: String
    /// Where poison entries go, with their error text.
    public var deadLetterStream: String

    public init(stream: String, attemptsKey: String, deadLetterStream: String) {
        self.stream = stream
        self.attemptsKey = attemptsKey
        self.deadLetterStream = deadLetterStream
    }
}
