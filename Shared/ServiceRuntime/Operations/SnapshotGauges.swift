import Metrics
import PipelineCatalog
import RedisStreams
import ServiceLifecycle

/// Exports the pipeline snapshot as Prometheus gauges: stream lengths, consumer-group lag, pending
/// entries and the age of the oldest, delayed-queue sizes (held postbacks per window, retries, timers)
/// and dead letters per stage. Every service exports the same pipeline-wide figures (labelled by
/// stream, group or queue), so any one scrape target shows the whole pipeline.
///
/// The snapshot is read when `/metrics` is scraped (`refresh()`), at most once per `interval`, not on
/// a timer: a snapshot is some 700 Redis commands (every stream, group and queue of every partition),
/// and five services reading one every 5 s whether or not anyone looks cost Redis more than some of
/// the stages. A scrape now sees figures at most `interval` old instead of up to 5 s old.
public struct SnapshotGauges: Service {
    let connection: RedisConnection
    let partitioning: Partitioning
    let interval: Duration
    private let refresher = Refresher()

    public init(connection: RedisConnection, partitioning: Partitioning, interval: Duration = .seconds(5)) {
        self.connection = connection
        self.partitioning = partitioning
        self.interval = interval
    }

    /// Reads the snapshot and exports it, unless one was started less than `interval` ago (a scrape
    /// arriving while one is read answers with the previous figures, so the connection is never used
    /// by two at once). A failed read leaves the previous figures.
    public func refresh() async {
        await refresher.refresh(interval: interval) {
            // Whether the gauges below are this scrape's: while Redis is unreachable they keep the last
            // values read (a lag of 0 would look healthy), so this says 0 and an alert can fire.
            if let snapshot = try? await PipelineSnapshot.read(on: connection, partitioning, at: WallClock.nowMilliseconds()) {
                Self.export(snapshot)
                Gauge(label: "pipeline_snapshot_up").record(1)
            } else {
                Gauge(label: "pipeline_snapshot_up").record(0)
            }
            if let info = try? await connection.send(RedisCommand("INFO", "memory")).string { Self.exportMemory(info) }
        }
    }

    public func run() async throws {
        // Nothing to do until shutdown but own the connection.
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        }
        await connection.close()
    }

    /// One refresh at a time, at most one per interval.
    actor Refresher {
        var last: ContinuousClock.Instant?

        func refresh(interval: Duration, _ read: @Sendable () async -> Void) async {
            if let last, ContinuousClock.now - last < interval { return }
            // Set before the read: the actor is re-entered while it awaits.
            last = ContinuousClock.now
            await read()
        }
    }

    /// Redis's memory against its `maxmemory` (0: none set), from `INFO memory`: with `noeviction`, a
    /// full Redis refuses writes, so alert well before `redis_used_memory_bytes` reaches the maximum.
    /// On a cluster, the node this service's connection reaches.
    static func exportMemory(_ info: String) {
        for line in info.split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let value = Double(parts[1].filter { !$0.isWhitespace }) else { continue }
            switch parts[0] {
            case "used_memory": Gauge(label: "redis_used_memory_bytes").record(value)
            case "maxmemory": Gauge(label: "redis_maxmemory_bytes").record(value)
            default: continue
            }
        }
    }

    static func export(_ snapshot: PipelineSnapshot) {
        for stream in snapshot.streams {
            Gauge(label: "pipeline_stream_length", dimensions: [("stream", stream.name)]).record(stream.length)
        }
        for group in snapshot.groups {
            let labels = [("stream", group.stream), ("group", group.group)]
            Gauge(label: "pipeline_group_pending", dimensions: labels).record(group.pending)
            Gauge(label: "pipeline_group_consumers", dimensions: labels).record(group.consumers)
            if let lag = group.lag { Gauge(label: "pipeline_group_lag", dimensions: labels).record(lag) }
            for (partition, lag) in group.partitionLag.enumerated() {
                guard let lag else { continue }
                Gauge(label: "pipeline_partition_lag", dimensions: labels + [("partition", String(partition))]).record(lag)
            }
            Gauge(label: "pipeline_group_oldest_pending_seconds", dimensions: labels)
                .record(Double(group.oldestPendingMilliseconds ?? 0) / 1000)
        }
        for queue in snapshot.queues {
            Gauge(label: "pipeline_delayed_items", dimensions: [("queue", queue.name)]).record(queue.count)
        }
        for node in snapshot.nodes {
            let labels = [("node", node.address), ("role", node.role)]
            Gauge(label: "pipeline_redis_node_up", dimensions: labels).record(node.health == "ok" ? 1 : 0)
            Gauge(label: "pipeline_redis_node_partitions", dimensions: labels).record(node.partitions.count)
        }
        for stream in snapshot.deadLetters {
            Gauge(label: "pipeline_dead_letters", dimensions: [("stream", stream.name)]).record(stream.length)
        }
    }
}
