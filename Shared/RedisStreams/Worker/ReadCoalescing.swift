/// Merges a stage's GETs and MGETs (the reads sent with its WATCH) into one MGET, and gives each
/// original command back the reply it would have had.
///
/// A batch reads one key or two per message (a device's state, a conversion's plan and its marker):
/// as commands, about two per event across the stages, each parsed, dispatched and answered by Redis
/// on its own, and Redis commands per event are what a deployment's Redis is sized by. One MGET does the same reads in one command.
/// The reads of a stage are in the batch's hash slot on Redis Cluster (`StageReads.commands`), and
/// anywhere on one Redis, so one MGET is always allowed.
///
/// One difference, on keys the pipeline never writes anything but strings to: GET of a key of another
/// type is a WRONGTYPE error, MGET answers nil for it. Other commands keep their place and reply.
public struct ReadCoalescing: Sendable {
    /// What to send: the merged MGET (if any GET or MGET was merged) first, then every other command.
    public let commands: [RedisCommand]
    /// Per original command: where its reply comes from.
    private let sources: [Source]

    private enum Source: Sendable {
        /// The value at `offset` of the merged MGET's reply (a GET's).
        case value(offset: Int)
        /// `count` values from `offset` of the merged MGET's reply, as an array (an MGET's).
        case values(offset: Int, count: Int)
        /// The reply at `index` of what was sent.
        case sent(index: Int)
    }

    public init(_ reads: [RedisCommand]) {
        var keys: [[UInt8]] = []
        var sources: [Source] = []
        var others: [RedisCommand] = []
        sources.reserveCapacity(reads.count)
        for command in reads {
            let arguments = command.arguments
            switch Self.readKind(of: command) {
            case .get:
                sources.append(.value(offset: keys.count))
                keys.append(arguments[1])
            case .mget:
                sources.append(.values(offset: keys.count, count: arguments.count - 1))
                keys += arguments.dropFirst()
            case nil:
                sources.append(.sent(index: others.count))
                others.append(command)
            }
        }
        // Fewer than two reads: nothing to gain, and the commands go out exactly as given.
        guard reads.count - others.count >= 2 else {
            self.commands = reads
            self.sources = reads.indices.map { .sent(index: $0) }
            return
        }
        self.commands = [RedisCommand(bytes: [Array("MGET".utf8)] + keys)] + others
        self.sources = sources.map { source in
            if case .sent(let index) = source { return .sent(index: index + 1) }
            return source
        }
    }

    /// The replies to the original commands, in their order, from the replies to `commands`.
    public func replies(_ sent: [RedisReply]) -> [RedisReply] {
        // The merged MGET's reply, if there is one, is the first (only `.value(s)` sources read it).
        let values = sent.first?.elements ?? []
        let failure = sent.first?.errorMessage != nil ? sent.first : nil
        return sources.map { source in
            switch source {
            case .sent(let index):
                return index < sent.count ? sent[index] : .error("no reply")
            case .value(let offset):
                if let failure { return failure }
                return offset < values.count ? values[offset] : .error("MGET reply too short")
            case .values(let offset, let count):
                if let failure { return failure }
                guard offset + count <= values.count else { return .error("MGET reply too short") }
                return .array(Array(values[offset..<offset + count]))
            }
        }
    }

    private enum ReadKind { case get, mget }

    /// GET with one key, MGET with at least one; anything else (SET … GET included) is not merged.
    private static func readKind(of command: RedisCommand) -> ReadKind? {
        let arguments = command.arguments
        switch command.name {
        case "GET" where arguments.count == 2: return .get
        case "MGET" where arguments.count >= 2: return .mget
        default: return nil
        }
    }
}
