/// Which arguments of a command are keys: what cluster routing and the slot guard hash.
///
/// hiredis knows nothing about commands, and asking the server (`COMMAND GETKEYS`) would cost a round
/// trip per command, so the key positions of the commands this project sends are listed here.
/// A command not listed is assumed to take its key as argument 1 (true of most Redis data commands);
/// a keyless command missing from `keyless` would therefore be routed by its first argument, which
/// is harmless (any node answers it) but worth adding here when one shows up.
public enum CommandKeys {
    /// Indices into `command.arguments` of the command's keys, in order; empty for keyless commands.
    public static func keyIndices(of command: RedisCommand) -> [Int] {
        let arguments = command.arguments
        guard arguments.count > 1 else { return [] }
        let name = command.name
        if Self.keyless.contains(name) { return [] }
        if Self.allArgumentsAreKeys.contains(name) { return Array(1..<arguments.count) }
        switch name {
        case "BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX":
            // Every argument but the trailing timeout.
            return arguments.count > 2 ? Array(1..<(arguments.count - 1)) : []
        case "MSET", "MSETNX":
            return Array(stride(from: 1, to: arguments.count, by: 2))
        case "RENAME", "RENAMENX", "RPOPLPUSH", "LMOVE", "SMOVE", "COPY":
            return Array(1..<min(3, arguments.count))
        case "XGROUP", "XINFO", "OBJECT":
            // `<subcommand> key …`; HELP has no key.
            return arguments.count > 2 ? [2] : []
        case "SCAN":
            // Keyless, but a `MATCH` pattern holding a hash tag can only match keys of that tag's slot:
            // routed there, the scan covers exactly the node that can hold them (device erasure scans
            // one partition this way).
            guard let match = arguments.firstIndex(where: { Self.matches($0, "MATCH") }), match + 1 < arguments.count,
                let tag = ClusterSlot.hashTag(of: arguments[match + 1]),
                !tag.contains(where: {
                    [UInt8(ascii: "*"), UInt8(ascii: "?"), UInt8(ascii: "["), UInt8(ascii: "\\")].contains($0)
                })
            else { return [] }
            return [match + 1]
        case "MEMORY":
            return arguments.count > 2 && Self.matches(arguments[1], "USAGE") ? [2] : []
        case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO":
            // `script numkeys key… arg…`
            guard arguments.count > 2, let count = Int(String(decoding: arguments[2], as: UTF8.self)), count > 0
            else { return [] }
            return Array(3..<min(3 + count, arguments.count))
        case "XREAD", "XREADGROUP":
            // `… STREAMS key… id…`: as many keys as ids. XREADGROUP's `GROUP group consumer` comes
            // first and is skipped, so a group named "streams" is not taken for the keyword.
            let searchFrom = name == "XREADGROUP" ? min(4, arguments.count) : 1
            guard let streams = arguments[searchFrom...].firstIndex(where: { Self.matches($0, "STREAMS") }) else {
                return []
            }
            let count = (arguments.count - streams - 1) / 2
            return Array((streams + 1)..<(streams + 1 + count))
        default:
            return [1]
        }
    }

    /// The command's keys, in order; empty for keyless commands.
    public static func keys(of command: RedisCommand) -> [[UInt8]] {
        Self.keyIndices(of: command).map { command.arguments[$0] }
    }

    /// Commands that touch no key (or, like FLUSHALL, a whole node rather than a key; SCAN too, unless
    /// its MATCH pattern names a hash tag).
    static let keyless: Set<String> = [
        "MULTI", "EXEC", "DISCARD", "UNWATCH", "PING", "ECHO", "ASKING", "SCRIPT", "FUNCTION", "CLUSTER",
        "INFO", "SELECT", "WAIT", "CLIENT", "CONFIG", "DBSIZE", "FLUSHALL", "FLUSHDB", "TIME",
        "READONLY", "READWRITE", "COMMAND", "ROLE", "LASTSAVE", "HELLO", "AUTH", "QUIT", "MIGRATE",
        "RANDOMKEY", "KEYS", "SLOWLOG", "LATENCY", "DEBUG", "SAVE", "BGSAVE", "BGREWRITEAOF", "SHUTDOWN",
        "PUBLISH", "SUBSCRIBE", "UNSUBSCRIBE", "PSUBSCRIBE", "PUNSUBSCRIBE",
    ]

    /// Commands whose every argument is a key.
    static let allArgumentsAreKeys: Set<String> = ["DEL", "UNLINK", "EXISTS", "TOUCH", "MGET", "WATCH"]

    /// Case-insensitive comparison of an argument with an upper-case ASCII keyword.
    private static func matches(_ argument: [UInt8], _ keyword: String) -> Bool {
        argument.count == keyword.utf8.count
            && zip(argument, keyword.utf8).allSatisfy { byte, upper in
                byte == upper || (byte >= 0x61 && byte <= 0x7A && byte - 0x20 == upper)
            }
    }
}
