import Metrics
import RedisStreams

/// Per-stage throughput and latency, fed by the consumer loop after each batch.
public struct StageMetrics: StageObserver {
    public init() {}

    public func batchProcessed(stage: String, written: Int, failed: Int, deadLettered: Int, seconds: Double) {
        Counter(label: "stage_messages_total", dimensions: [("stage", stage), ("outcome", "written")]).increment(by: written)
        if failed > 0 {
            Counter(label: "stage_messages_total", dimensions: [("stage", stage), ("outcome", "failed")]).increment(by: failed)
        }
        if deadLettered > 0 {
            Counter(label: "stage_dead_letters_total", dimensions: [("stage", stage)]).increment(by: deadLettered)
        }
        Timer(label: "stage_batch_seconds", dimensions: [("stage", stage)]).recordNanoseconds(Int64(seconds * 1e9))
    }
}
