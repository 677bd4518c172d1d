/// A metrics hook called after each non-empty batch a `StageWorker` finishes.
public protocol StageObserver: Sendable {
    /// `failed` counts entries that failed this time (dead-lettered ones included); `seconds` is the batch's wall time.
    func batchProcessed(stage: String, written: Int, failed: Int, deadLettered: Int, seconds: Double)
    /// What the stage's outcomes asked to count, once their transaction committed.
    func committed(_ counts: [StageCount])
}

extension StageObserver {
    public func committed(_ counts: [StageCount]) {}
}
