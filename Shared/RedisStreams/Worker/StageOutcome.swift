/// What a stage decided for one entry.
public enum StageOutcome: Sendable, Equatable {
    /// Commit these commands (state and output) in the batch's transaction, which also acks the entry.
    case write([RedisCommand])
    /// Leave the entry pending and count an attempt; after `maxAttempts` it is dead-lettered with this text.
    case failed(String)
}
