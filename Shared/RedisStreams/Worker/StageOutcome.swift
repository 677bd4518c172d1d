/// What a stage decided for one entry.
public enum StageOutcome: Sendable, Equatable {
    /// Commit these commands (state and output) in the batch's transaction, which also acks the entry;
    /// once that transaction succeeds (never for a batch redone after a WATCH conflict), `counts` are
    /// handed to the worker's observer and `after` is sent: writes outside the batch's partition that
    /// may be lost if the process dies right after the commit (views such as refusal logs, never state).
    case write([RedisCommand], counts: [StageCount] = [], after: [RedisCommand] = [])
    /// Leave the entry pending and count an attempt; after `maxAttempts` it is dead-lettered with this text.
    case failed(String)

    /// `write` of what `commands` builds, or `failed` with the reason when it throws (a message or a
    /// stored state that could not be encoded): the entry is retried, then dead-lettered with that
    /// reason and counted, and nothing empty is ever written in its place.
    public static func encoding(
        counts: [StageCount] = [], after: [RedisCommand] = [], _ commands: () throws -> [RedisCommand]
    ) -> StageOutcome {
        do {
            return .write(try commands(), counts: counts, after: after)
        } catch {
            return .failed("encoding the entry's writes failed: \(error)")
        }
    }

    /// Whether the entry's writes are committed (`write`).
    public var isWrite: Bool {
        if case .write = self { true } else { false }
    }
}

/// One increment of a named counter with its dimensions (what the stage decided, counted once).
public struct StageCount: Sendable, Hashable {
    public var label: String
    public var dimensions: [Dimension]

    public struct Dimension: Sendable, Hashable {
        public var key: String
        public var value: String
    }

    public init(_ label: String, _ dimensions: [(String, String)] = []) {
        self.label = label
        self.dimensions = dimensions.map { Dimension(key: $0.0, value: $0.1) }
    }
}
