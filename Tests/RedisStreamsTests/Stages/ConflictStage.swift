import RedisStreams
import Synchronization

/// Reads a WATCHed `counter`; on its first decision another connection changes it, forcing a redo.
final class ConflictStage: StreamStage {
    let output: String
    let meddler: RedisConnection
    let decisions = Atomic<Int>(0)

    init(output: String, meddler: RedisConnection) {
        self.output = output
        self.meddler = meddler
    }

    func reads(for batch: [StreamEntry]) -> StageReads {
        StageReads(watch: ["counter"], commands: [RedisCommand("GET", "counter")])
    }

    func decide(_ batch: [StreamEntry], state: [RedisReply]) async -> [StageOutcome] {
        if self.decisions.add(1, ordering: .relaxed).newValue == 1 {
            _ = try? await self.meddler.send(RedisCommand("INCR", "counter"))
        }
        let counter = state[0].int ?? 0
        return batch.map { entry in
            .write(
                [
                    StreamCommands.add(self.output, message: entry.message),
                    RedisCommand("SET", "decided:\(entry.id)", String(counter)),
                ], counts: [StageCount("decided_total", [("counter", String(counter))])])
        }
    }
}
