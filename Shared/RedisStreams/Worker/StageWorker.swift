import Foundation
import Logging
import Synchronization

/// The one consumer loop every stage uses: read a batch, let the stage decide, commit writes and acks atomically.
///
/// Each batch costs a fixed number of round trips, whatever its size: WATCH plus the stage's reads,
/// one MULTI/EXEC with every write and one XACK, one pipeline of failure counts (only if something
/// failed), one MULTI/EXEC of dead letters (only if something ran out of attempts). Entries of
/// consumers that died stay pending and are claimed after `claimIdleMilliseconds` by any replica.
///
/// The connection must be this worker's own: WATCH state belongs to a connection, so `decide` must
/// not run transactions on it.
public final class StageWorker<Stage: StreamStage>: Sendable {
    public let configuration: StageWorkerConfiguration
    let stage: Stage
    let connection: RedisConnection
    let logger: Logger
    let observer: (any StageObserver)?
    /// One consumer per partition (index = partition): group creation, claims, pending counts.
    let consumers: [StreamConsumer]
    /// Stream name → partition index, for read replies.
    let partitionIndex: [String: Int]
    let state = Mutex(StageWorkerState())

    /// A worker for one stage on one connection; nothing is sent until `run` or `processOnce`.
    public init(
        configuration: StageWorkerConfiguration,
        stage: Stage,
        connection: RedisConnection,
        logger: Logger,
        observer: (any StageObserver)? = nil
    ) {
        self.configuration = configuration
        self.stage = stage
        self.connection = connection
        var logger = logger
        logger[metadataKey: "stage"] = .string(configuration.group)
        self.logger = logger
        self.observer = observer
        self.partitionIndex = Dictionary(
            configuration.partitions.enumerated().map { ($1.stream, $0) }, uniquingKeysWith: { first, _ in first })
        self.consumers = configuration.partitions.map { partition in
            StreamConsumer(
                stream: partition.stream,
                group: configuration.group,
                consumer: configuration.consumer,
                batchSize: configuration.batchSize,
                blockMilliseconds: configuration.blockMilliseconds,
                attemptsKey: partition.attemptsKey
            )
        }
    }

    /// Loops until the task is cancelled, finishing the batch in hand first; rethrows only `closed`.
    ///
    /// Other errors (Redis restarting, a network blip) are logged and retried with backoff: the
    /// entries involved are still pending, so nothing is lost by carrying on.
    public func run() async throws {
        self.logger.info(
            "stage worker started",
            metadata: ["stream": "\(self.configuration.stream)", "partitions": "\(self.configuration.partitions.count)"])
        var failuresInARow = 0
        while !Task.isCancelled {
            do {
                _ = try await self.processOnce()
                failuresInARow = 0
            } catch let error as RedisError where error.code == .closed {
                self.logger.info("stage worker stopped: connection closed")
                throw error
            } catch is CancellationError {
                break
            } catch {
                failuresInARow += 1
                let delay = min(100 << min(failuresInARow, 6), 5_000)
                self.logger.error(
                    "stage worker iteration failed",
                    metadata: ["error": "\(error)", "retry.milliseconds": "\(delay)"]
                )
                try? await Task.sleep(for: .milliseconds(delay))
            }
        }
        self.logger.info("stage worker stopped")
    }

    /// One claim step (if due) and one read over every partition, processed in batches; returns the
    /// entries handled.
    public func processOnce() async throws -> Int {
        try await self.ensureGroup()
        try await self.giveBackSurvivedDeliveries()
        var handled = try await self.claimIfDue()
        try await self.trimIfDue()
        // A stop requested during the claim should not start a new (blocking) read.
        if Task.isCancelled { return handled }
        // Partitions with entries this worker left pending (see `survived`): its own pending entries there
        // first, before anything newer of those partitions.
        let unfinished = self.state.withLock { state in
            defer { state.unfinished = [:] }
            return state.unfinished
        }
        let entries: [StreamEntry]
        do {
            entries = try await self.groupChecked {
                unfinished.isEmpty ? try await self.readNew() : try await self.readOwnPending(after: unfinished)
            }
        } catch {
            self.state.withLock { state in
                for (partition, after) in unfinished {
                    state.unfinished[partition] = min(after, state.unfinished[partition] ?? after)
                }
            }
            throw error
        }
        do {
            let nodes = try await self.readNodes(Set(entries.map(\.partition)))
            for batch in self.batches(entries) {
                try await self.process(batch, claimed: !unfinished.isEmpty, readFrom: nodes[batch[0].partition])
            }
        } catch let error as RedisError where error.isUnavailability {
            self.survived(entries)
            throw error
        }
        handled += entries.count
        if !entries.isEmpty, entries.count < self.configuration.batchSize, self.configuration.lingerMilliseconds > 0 {
            try? await Task.sleep(for: .milliseconds(self.configuration.lingerMilliseconds))
        }
        return handled
    }

    /// Every `trimIntervalMilliseconds`, trims what every group acknowledged and is older than the
    /// retention: consumed events (and their device identifiers) do not stay in Redis.
    private func trimIfDue() async throws {
        let retention = self.configuration.retentionMilliseconds
        let deadLetterRetention = self.configuration.deadLetterRetentionMilliseconds
        guard retention != nil || deadLetterRetention != nil else { return }
        let due = self.state.withLock { state -> Bool in
            if let next = state.nextTrim, ContinuousClock.now < next { return false }
            state.nextTrim = ContinuousClock.now + .milliseconds(self.configuration.trimIntervalMilliseconds)
            return true
        }
        guard due else { return }
        let now = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
        var trimmed = 0
        if let retention {
            for stream in self.configuration.partitions.map(\.stream) + self.configuration.unreadOutputs {
                trimmed += try await StreamTrim.trim(stream, retentionMilliseconds: retention, now: now, on: self.connection)
            }
        }
        // Dead letters: no group reads them, so by age alone; exactly (they are few, and `~` would keep
        // a whole node of them past their time).
        if let deadLetterRetention {
            for stream in Set(self.configuration.partitions.map(\.deadLetterStream)).sorted() {
                trimmed += try await StreamTrim.trim(
                    stream, retentionMilliseconds: deadLetterRetention, now: now, approximate: false, on: self.connection)
            }
        }
        if trimmed > 0 { self.logger.debug("trimmed acknowledged entries", metadata: ["count": "\(trimmed)"]) }
    }

    private func ensureGroup() async throws {
        if self.state.withLock({ $0.groupReady }) { return }
        for consumer in self.consumers { try await consumer.ensureGroup(on: self.connection) }
        self.state.withLock { $0.groupReady = true }
    }

    /// Runs `body`; if the group vanished (someone deleted the stream) it is recreated on the next call.
    private func groupChecked<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as RedisError where error.serverErrorPrefix == "NOGROUP" {
            self.state.withLock { $0.groupReady = false }
            throw error
        }
    }

    /// One claim step on each partition whose claim is due.
    private func claimIfDue() async throws -> Int {
        var handled = 0
        for partition in self.configuration.readIndices {
            handled += try await self.claimIfDue(partition: partition)
        }
        return handled
    }

    private func claimIfDue(partition: Int) async throws -> Int {
        let consumer = self.consumers[partition]
        let cursor: String? = self.state.withLock { state in
            if let next = state.nextClaim[partition], ContinuousClock.now < next { return nil }
            return state.claimCursor[partition] ?? "0-0"
        }
        guard let cursor else { return 0 }
        // Ownership only: Redis leaves the delivery counts alone until each entry is taken below.
        let claim = try await self.groupChecked {
            try await consumer.claimStale(
                minIdleMilliseconds: self.configuration.claimIdleMilliseconds,
                startingAt: cursor,
                on: self.connection
            )
        }
        let interval = self.configuration.claimIntervalMilliseconds
        self.state.withLock { state in
            state.claimCursor[partition] = claim.nextCursor
            // Keep stepping through a long pending list on later calls; rest only once it is covered.
            state.nextClaim[partition] = claim.isScanComplete ? ContinuousClock.now + .milliseconds(interval) : nil
        }
        guard !claim.ids.isEmpty else { return 0 }
        self.logger.info(
            "claimed stale stream entries", metadata: ["count": "\(claim.ids.count)", "stream": "\(consumer.stream)"])
        let deliveries = try await self.deliveryCounts(claim.ids, consumer: consumer)
        // One at a time: the entry that stopped the last consumer may be among them, and should it stop
        // this one too, the delivery counted is its own, not its batch neighbours'. Past `maxAttempts`
        // deliveries (an entry that failed cleanly is counted in `<group>:attempts`; one whose consumers
        // die holding it never is) it is dead-lettered instead of taking down replica after replica.
        for id in claim.ids {
            // Until the claim answers, only its id is known (enough to give its delivery back).
            var entry = StreamEntry(id: id, message: [], partition: partition)
            let left = self.state.withLock { $0.unfinished[partition] }
            do {
                guard var claimed = try await consumer.claim(id, on: self.connection) else { continue }
                claimed.partition = partition
                entry = claimed
                let node = try await self.readNodes([partition])[partition]
                let count = deliveries[entry.id] ?? 0
                if count >= Int64(self.configuration.maxAttempts) {
                    try await self.deadLetter(
                        [
                            Failure(
                                entry: entry,
                                error: "delivered \(count) times and never acknowledged: each consumer holding it stopped")
                        ], on: node)
                } else {
                    try await self.process([entry], claimed: true, readFrom: node)
                }
            } catch let error as RedisError where error.isUnavailability {
                self.survived([entry])
                throw error
            }
            // Left because the partition moved: the rest (this consumer's now) follow it in the next read.
            if self.state.withLock({ $0.unfinished[partition] != left }) { break }
        }
        return claim.ids.count
    }

    /// Redis Cluster: the node that answered the last read of each of `partitions`, by partition (empty
    /// on one server). A batch is committed there or not at all (`process`).
    func readNodes(_ partitions: Set<Int>) async throws -> [Int: String] {
        guard self.connection.configuration.cluster, !partitions.isEmpty else { return [:] }
        let ordered = partitions.sorted()
        let nodes = try await self.connection.answeringNodes(of: ordered.map { self.configuration.partitions[$0].stream })
        return Dictionary(
            uniqueKeysWithValues: zip(ordered, nodes).compactMap { partition, node in node.map { (partition, $0) } })
    }

    /// Redis Cluster: whether `partition` is served by another node than `node` per the map now.
    func moved(_ partition: Int, from node: String) async throws -> Bool {
        try await self.connection.servingNodes(of: [self.configuration.partitions[partition].stream])[0] != node
    }

    /// Redis's delivery count of each entry (this consumer owns them now).
    private func deliveryCounts(_ ids: [String], consumer: StreamConsumer) async throws -> [String: Int64] {
        guard let first = ids.first, let last = ids.last else { return [:] }
        // One XPENDING over the claimed range, for this consumer (the claim made it the owner).
        let reply = try await self.connection.send(
            RedisCommand(
                "XPENDING", consumer.stream, self.configuration.group, first, last,
                String(ids.count + self.configuration.batchSize), self.configuration.consumer))
        var deliveries: [String: Int64] = [:]
        for item in reply.elements {
            let fields = item.elements
            if fields.count >= 4, let id = fields[0].string, let count = fields[3].int { deliveries[id] = count }
        }
        return deliveries
    }
}

/// What a worker remembers between calls.
struct StageWorkerState: Sendable {
    var groupReady = false
    /// Where each partition's next XAUTOCLAIM step starts (absent: "0-0").
    var claimCursor: [Int: String] = [:]
    /// When each partition's next claim step is due; absent means now.
    var nextClaim: [Int: ContinuousClock.Instant] = [:]
    /// The pause before the next round of non-blocking reads (partitions read without BLOCK).
    var idlePause = 1
    /// When the input stream is trimmed next; nil means now.
    var nextTrim: ContinuousClock.Instant?
    /// Entries (by partition) whose delivery ended in an error this worker survived, to be given back
    /// (see `giveBackSurvivedDeliveries`), and how many.
    var survived: [Int: Set<String>] = [:]
    var survivedCount = 0
    /// Partitions where this worker left entries pending (`survived`), with the id to read its own
    /// pending entries after (just before the oldest left): the next read takes those (`readOwnPending`).
    var unfinished: [Int: StreamTrim.EntryID] = [:]
}
