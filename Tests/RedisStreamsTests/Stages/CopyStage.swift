import RedisStreams

/// Copies each message to `output` and records `state:<message>` = entry id.
///
/// With `deduplicate`, the state keys are WATCHed and read first and an already-recorded message
/// writes nothing: the shape of a real stage. Without it every decision writes, so a double commit
/// by the worker would show up as a duplicate in `output`.
struct CopyStage: StreamStage {
    let output: String
    var deduplicate = false

    static func stateKey(_ entry: StreamEntry) -> String {
        "state:" + String(decoding: entry.message, as: UTF8.self)
    }

    func reads(for batch: [StreamEntry]) -> StageReads {
        guard self.deduplicate else { return StageReads() }
        let keys = batch.map(Self.stateKey)
        return StageReads(watch: keys, commands: keys.map { RedisCommand("GET", $0) })
    }

    func decide(_ batch: [StreamEntry], state: [RedisReply]) async -> [StageOutcome] {
        batch.enumerated().map { index, entry in
            if self.deduplicate, !state[index].isNull { return .write([]) }
            return .write([
                StreamCommands.add(self.output, message: entry.message),
                RedisCommand("SET", Self.stateKey(entry), entry.id),
            ])
        }
    }
}
