import RedisStreams
import Synchronization

/// Copies like `CopyStage`, but a batch holding `poison` hangs until cancelled: an entry that stops
/// every consumer that takes it (a crash it causes). `stops` counts the consumers it stopped.
struct PoisonStage: StreamStage {
    final class Stops: Sendable {
        let count = Mutex(0)
        var value: Int { count.withLock { $0 } }
    }

    let inner: CopyStage
    let poison: [UInt8]
    let stops: Stops

    func reads(for batch: [StreamEntry]) -> StageReads { self.inner.reads(for: batch) }

    func decide(_ batch: [StreamEntry], state: [RedisReply]) async -> [StageOutcome] {
        if batch.contains(where: { $0.message == self.poison }) {
            self.stops.count.withLock { $0 += 1 }
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
            return []
        }
        return await self.inner.decide(batch, state: state)
    }
}
