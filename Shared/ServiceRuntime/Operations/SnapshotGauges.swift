import Metrics
import RedisStreams
import ServiceLifecycle

/// Exports the pipeline snapshot as Prometheus gauges every few seconds: stream lengths, consumer-group
/// lag, pending entries and the age of the oldest, delayed-queue sizes (held postbacks per window,
/// retries, timers) and dead letters per stage. Every service exports the same pipeline-wide figures
/// (labelled by stream, group or queue), so any one scrape target shows the whole pipeline.
public struct SnapshotGauges: Service {
    let connection: RedisConnection
    let partitioning: Partitioning
    let interval: Duration

    public init(connection: RedisConnection, partitioning: Partitioning, interval: Duration = .seconds(5)) {
        self.connection = connection
        self.partitioning = partitioning
        self.interval = interval
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                if let snapshot = try? await PipelineSnapshot.read(on: connection, partitioning) { Self.export(snapshot) }
                try? await Task.sleep(for: interval)
            }
        }
        await connection.close()
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
