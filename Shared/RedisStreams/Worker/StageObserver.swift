/// A metrics hook called after each non-empty batch a `StageWorker` finishes.
public protocol StageObserver: Sendable {
    /// `failed` counts entries that failed this time (dead-lettered ones included); `seconds` is the batch's wall time.
    func batchProcessed(stage: String, written: Int, failed: Int, deadLettered: Int, seconds: Double)
}
