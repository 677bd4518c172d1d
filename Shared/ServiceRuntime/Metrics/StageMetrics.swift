import AttributionModel
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

    public func committed(_ counts: [StageCount]) {
        for count in counts {
            Counter(label: count.label, dimensions: count.dimensions.map { ($0.key, $0.value) }).increment()
        }
    }
}

extension StageCount {
    /// The metric a step's count increments (names and labels as the dashboard and docs/reference/metrics.md know them).
    public init(_ count: StepCount) {
        switch count {
        case .lateImpression:
            self.init("winner_late_impressions_total")
        case .settleExtended:
            self.init("winner_settle_extensions_total")
        case .redeliveredConversion:
            self.init("winner_redelivered_conversions_total")
        case .skadnetworkUpdateIgnored:
            self.init("winner_skadnetwork_updates_ignored_total")
        case .conversion(let outcome):
            self.init("winner_conversions_total", [("outcome", outcome.label)])
        case .rejection(let reason):
            self.init("verifier_rejections_total", [("reason", reason.rawValue)])
        case .testPostbacks:
            self.init("scheduler_test_postback_requests_total")
        case .latePostback(let change):
            self.init("scheduler_late_postbacks_total", [("change", change.rawValue)])
        case .delivery(let outcome, let attempt):
            self.init("dispatcher_deliveries_total", [("outcome", outcome.rawValue), ("attempt", String(attempt))])
        }
    }
}
