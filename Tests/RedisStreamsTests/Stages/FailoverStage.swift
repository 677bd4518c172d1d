import RedisStreams
import Synchronization

/// Copies like `CopyStage`, but its own Redis work fails (as in a failover) for its first `outages`
/// decisions: `decide` throws, as a stage does when Redis, not the entry, is the problem.
final class FailoverStage: StreamStage {
    let inner: CopyStage
    let outages: Mutex<Int>

    init(inner: CopyStage, outages: Int) {
        self.inner = inner
        self.outages = Mutex(outages)
    }

    func reads(for batch: [StreamEntry]) -> StageReads { self.inner.reads(for: batch) }

    func decide(_ batch: [StreamEntry], state: [RedisReply]) async throws -> [StageOutcome] {
        let failing = self.outages.withLock { outages in
            defer { outages = max(0, outages - 1) }
            return outages > 0
        }
        if failing { throw RedisError(.io, "reading a reply failed: Connection reset by peer") }
        return await self.inner.decide(batch, state: state)
    }
}
