import RedisStreams
import Testing

@Suite("CommandKeys: which arguments are keys")
struct CommandKeysTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let command: [String]
        let keys: [String]
        var testDescription: String { self.command.joined(separator: " ") }
    }

    static let cases: [Case] = [
        Case(command: ["GET", "k"], keys: ["k"]),
        Case(command: ["set", "k", "v", "PX", "10"], keys: ["k"]),
        Case(command: ["HINCRBY", "h", "f", "1"], keys: ["h"]),
        Case(command: ["ZRANGEBYSCORE", "z", "-inf", "+inf"], keys: ["z"]),
        Case(command: ["XADD", "s", "*", "m", "x"], keys: ["s"]),
        Case(command: ["XACK", "s", "g", "1-0", "2-0"], keys: ["s"]),
        Case(command: ["XAUTOCLAIM", "s", "g", "c", "0", "0-0"], keys: ["s"]),
        Case(command: ["DEL", "a", "b", "c"], keys: ["a", "b", "c"]),
        Case(command: ["EXISTS", "a", "b"], keys: ["a", "b"]),
        Case(command: ["MGET", "a", "b"], keys: ["a", "b"]),
        Case(command: ["WATCH", "a", "{t}b"], keys: ["a", "{t}b"]),
        Case(command: ["MSET", "a", "1", "b", "2"], keys: ["a", "b"]),
        Case(command: ["BLPOP", "a", "b", "0.5"], keys: ["a", "b"]),
        Case(command: ["RENAME", "a", "b"], keys: ["a", "b"]),
        Case(command: ["XGROUP", "CREATE", "s", "g", "0", "MKSTREAM"], keys: ["s"]),
        Case(command: ["XINFO", "GROUPS", "s"], keys: ["s"]),
        Case(command: ["XINFO", "HELP"], keys: []),
        Case(command: ["OBJECT", "ENCODING", "k"], keys: ["k"]),
        Case(command: ["MEMORY", "USAGE", "k", "SAMPLES", "0"], keys: ["k"]),
        Case(command: ["MEMORY", "STATS"], keys: []),
        Case(command: ["EVAL", "return 1", "2", "a", "b", "arg"], keys: ["a", "b"]),
        Case(command: ["EVALSHA", "abc", "1", "a", "arg"], keys: ["a"]),
        Case(command: ["EVAL", "return 1", "0", "arg"], keys: []),
        Case(command: ["XREAD", "COUNT", "5", "BLOCK", "10", "STREAMS", "a", "b", "0", "0"], keys: ["a", "b"]),
        Case(command: ["XREADGROUP", "GROUP", "g", "c", "COUNT", "5", "streams", "s", ">"], keys: ["s"]),
        Case(command: ["XREADGROUP", "GROUP", "streams", "c", "STREAMS", "s", ">"], keys: ["s"]),
        Case(command: ["MULTI"], keys: []),
        Case(command: ["EXEC"], keys: []),
        Case(command: ["UNWATCH"], keys: []),
        Case(command: ["PING"], keys: []),
        Case(command: ["SCRIPT", "LOAD", "return 1"], keys: []),
        Case(command: ["CLUSTER", "KEYSLOT", "k"], keys: []),
        Case(command: ["WAIT", "1", "100"], keys: []),
        Case(command: ["CLIENT", "ID"], keys: []),
        Case(command: ["SCAN", "0", "MATCH", "x*"], keys: []),
        // A pattern naming a hash tag routes the scan to that tag's slot.
        Case(command: ["SCAN", "0", "MATCH", "winner:device:{p07}:*:d", "COUNT", "10"], keys: ["winner:device:{p07}:*:d"]),
        Case(command: ["SCAN", "0", "MATCH", "a{p*}b"], keys: []),
        Case(command: ["SELECT", "3"], keys: []),
        // Not listed: argument 1 is taken for the key, as for most data commands.
        Case(command: ["SOMEFUTURECOMMAND", "k", "x"], keys: ["k"]),
    ]

    @Test("key positions", arguments: cases)
    func keys(_ known: Case) {
        let keys = CommandKeys.keys(of: RedisCommand(known.command))
        #expect(keys == known.keys.map { Array($0.utf8) })
    }

    @Test("a command without arguments has no key")
    func bare() {
        #expect(CommandKeys.keyIndices(of: RedisCommand("TIME")).isEmpty)
        #expect(CommandKeys.keyIndices(of: RedisCommand("GET")).isEmpty)
        #expect(CommandKeys.keyIndices(of: RedisCommand(bytes: [])).isEmpty)
    }

    /// The name routing and coalescing switch on: upper case whatever the caller wrote, as
    /// `uppercased()` gives it (the ASCII fast path and the general one agree).
    @Test("command names in upper case", arguments: ["GET", "set", "zAdd", "xinfo", "", "evalsha_ro", "1x-y_z", "ça", "straße"])
    func name(_ written: String) {
        #expect(RedisCommand(written, "k").name == written.uppercased())
    }
}
