/// The business logic of one pipeline stage, run by `StageWorker` over batches of stream entries.
public protocol StreamStage: Sendable {
    /// The batch as the stage works with it (decoded messages, the keys they touch), computed once per
    /// batch so that `reads` and `decide` never decode the same bytes twice.
    associatedtype Prepared: Sendable = [StreamEntry]
    /// Parses a batch. Pure: it runs once, before the first read, and is reused if a WATCH conflict
    /// makes the worker read and decide again.
    func prepare(_ batch: [StreamEntry]) -> Prepared
    /// State the decisions for this batch depend on: `watch` keys are WATCHed, then `commands` are sent in one pipeline.
    func reads(for batch: Prepared) -> StageReads
    /// Takes the replies to `reads(for:).lookups`, before anything is WATCHed or read; false when they
    /// are stale (a cache the stage keeps was invalidated by them) and must be read again.
    func lookupsCurrent(_ batch: Prepared, lookups: [RedisReply]) -> Bool
    /// One outcome per entry, same order. `state` holds the replies to `reads(for:).commands`.
    ///
    /// Throws when Redis failed the stage's own round trips (nothing was decided): the batch stays
    /// pending and is tried again, and no attempt is counted against its entries, since a failover is
    /// not their fault. A `.failed` outcome is for what the entry itself caused.
    func decide(_ batch: Prepared, state: [RedisReply]) async throws -> [StageOutcome]
    /// Called once the batch's transaction committed (never for an attempt redone after a WATCH
    /// conflict): for a stage that keeps a cache of what it wrote.
    func committed(_ batch: Prepared)
}

extension StreamStage where Prepared == [StreamEntry] {
    public func prepare(_ batch: [StreamEntry]) -> [StreamEntry] { batch }
}

extension StreamStage {
    public func committed(_ batch: Prepared) {}
    public func lookupsCurrent(_ batch: Prepared, lookups: [RedisReply]) -> Bool { true }
}
