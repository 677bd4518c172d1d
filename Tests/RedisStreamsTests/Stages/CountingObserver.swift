import RedisStreams
import Synchronization

/// Sums what a worker reports after each batch.
final class CountingObserver: StageObserver {
    struct Totals: Sendable, Equatable {
        var batches = 0
        var written = 0
        var failed = 0
        var deadLettered = 0
        /// What the stages' committed outcomes asked to count.
        var committed: [StageCount] = []
    }

    let totals = Mutex(Totals())

    func batchProcessed(stage: String, written: Int, failed: Int, deadLettered: Int, seconds: Double) {
        self.totals.withLock {
            $0.batches += 1
            $0.written += written
            $0.failed += failed
            $0.deadLettered += deadLettered
        }
    }

    func committed(_ counts: [StageCount]) {
        self.totals.withLock { $0.committed += counts }
    }
}
