/// The state a stage's decisions for one batch depend on.
public struct StageReads: Sendable {
    /// Keys WATCHed before reading, so a concurrent change makes the batch's EXEC fail and be redone.
    public var watch: [String]
    /// Read commands sent in one pipeline with the WATCH; their replies are handed to `decide` as
    /// `state`, after the replies to `lookups`. On Redis Cluster they must be in the batch's slot.
    public var commands: [RedisCommand]
    /// Reads of keys outside the batch's partition (the registry, crowd counters summed over every
    /// partition), sent first in a pipeline of their own that the transport may split across nodes:
    /// never WATCHed, so nothing the batch must not decide twice on may depend on them alone.
    public var lookups: [RedisCommand]

    /// Reads from their parts; all empty means the stage decides from the messages alone.
    public init(watch: [String] = [], commands: [RedisCommand] = [], lookups: [RedisCommand] = []) {
        self.watch = watch
        self.commands = commands
        self.lookups = lookups
    }
}
