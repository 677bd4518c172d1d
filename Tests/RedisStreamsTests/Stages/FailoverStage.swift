import RedisStreams
import Synchronization

/// Copies like `CopyStage`, but its own Redis work fails with `error` (a reset connection in a failover,
/// say) for its first `outages` decisions: `decide` throws, as a stage does when a round trip of its own
/// fails.
final class FailoverStage: StreamStage {
    let inner: CopyStage
    let outages: Mutex<Int>
    let error: RedisError

    init(inner: CopyStage, outages: Int, error: RedisError) {
        self.inner = inner
        self.outages = Mutex(outages)
        self.error = error
    }

    func reads(for batch: [StreamEntry]) -> StageReads { self.inner.reads(for: batch) }

    func decide(_ batch: [StreamEntry], state: [RedisReply]) async throws -> [StageOutcome] {
        let failing = self.outages.withLock { outages in
            defer { outages = max(0, outages - 1) }
            return outages > 0
        }
        if failing { throw self.error }
        return await self.inner.decide(batch, state: state)
    }
}
