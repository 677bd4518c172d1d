/// The state a stage's decisions for one batch depend on.
public struct StageReads: Sendable {
    /// Keys WATCHed before reading, so a concurrent change makes the batch's EXEC fail and be redone.
    public var watch: [String]
    /// Read commands sent in one pipeline; their replies are handed to `decide` as `state`.
    public var commands: [RedisCommand]

    /// Reads from their parts; both empty means the stage decides from the messages alone.
    public init(watch: [String] = [], commands: [RedisCommand] = []) {
        self.watch = watch
        self.commands = commands
    }
}
