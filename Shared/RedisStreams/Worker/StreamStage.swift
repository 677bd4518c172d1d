/// The business logic of one pipeline stage, run by `StageWorker` over batches of stream entries.
public protocol StreamStage: Sendable {
    /// State the decisions for this batch depend on: `watch` keys are WATCHed, then `commands` are sent in one pipeline.
    func reads(for batch: [StreamEntry]) -> StageReads
    /// One outcome per entry, same order. `state` holds the replies to `reads(for:).commands`.
    func decide(_ batch: [StreamEntry], state: [RedisReply]) async -> [StageOutcome]
}
