import RedisStreams
import TestSupport
import Testing

/// `ReadCoalescing` must hand each read the reply it would have had on its own: each case sends the
/// reads one by one and coalesced to a real Redis holding the same keys, and compares the replies.
@Suite("ReadCoalescing: one MGET, the same replies")
struct ReadCoalescingTests {
    let server: RedisServer
    let redis: RedisConnection

    init() async throws {
        self.server = try await RedisServer.start()
        self.redis = self.server.connect()
        _ = try await self.redis.pipeline([
            RedisCommand("SET", "s:1", "one"), RedisCommand("SET", "s:2", "two"), RedisCommand("SET", "s:3", "three"),
            RedisCommand("ZADD", "z:1", "1", "a", "2", "b"), RedisCommand("HSET", "h:1", "f", "v"),
        ])
    }

    static let cases: [(name: String, reads: [RedisCommand], sent: Int)] = [
        ("nothing", [], 0),
        ("one GET goes out as it is", [RedisCommand("GET", "s:1")], 1),
        ("one MGET goes out as it is", [RedisCommand("MGET", "s:1", "s:9")], 1),
        ("GETs, present and missing", [RedisCommand("GET", "s:1"), RedisCommand("GET", "s:9"), RedisCommand("GET", "s:3")], 1),
        (
            "MGETs of a plan and its marker",
            [RedisCommand("MGET", "s:1", "s:9"), RedisCommand("MGET", "s:8", "s:2"), RedisCommand("MGET", "s:3", "s:3")], 1
        ),
        (
            "GETs between other reads keep their order",
            [
                RedisCommand("ZRANGE", "z:1", "0", "-1", "WITHSCORES"), RedisCommand("GET", "s:2"),
                RedisCommand("HGETALL", "h:1"), RedisCommand("mget", "s:3", "s:1", "s:7"), RedisCommand("get", "s:1"),
            ], 3
        ),
        ("a SET … GET is a write, not merged", [RedisCommand("GET", "s:1"), RedisCommand("SET", "s:5", "x", "NX", "GET")], 2),
        ("a GET with two arguments is not merged", [RedisCommand("GET", "s:1", "s:2"), RedisCommand("GET", "s:2")], 2),
    ]

    @Test("each read's reply is the one it has alone", arguments: cases.indices)
    func sameReplies(_ index: Int) async throws {
        let (name, reads, sent) = Self.cases[index]
        let alone = try await self.redis.pipeline(reads)
        _ = try await self.redis.send(RedisCommand("DEL", "s:5"))  // the SET … NX of the case above, undone
        let coalescing = ReadCoalescing(reads)
        #expect(coalescing.commands.count == sent, "\(name)")
        let together = coalescing.replies(try await self.redis.pipeline(coalescing.commands))
        _ = try await self.redis.send(RedisCommand("DEL", "s:5"))
        #expect(together == alone, "\(name)")
    }

    @Test("a merged MGET's error is every merged read's reply; the documented WRONGTYPE difference")
    func errorsAndTypes() async throws {
        let reads = [RedisCommand("GET", "s:1"), RedisCommand("HGETALL", "h:1"), RedisCommand("MGET", "s:2", "s:3")]
        let coalescing = ReadCoalescing(reads)
        let replies = coalescing.replies([.error("ERR down"), .array([.bulk(Array("v".utf8))])])
        #expect(replies == [.error("ERR down"), .array([.bulk(Array("v".utf8))]), .error("ERR down")])

        // GET of a hash is WRONGTYPE alone; in one MGET it reads as missing (see `ReadCoalescing`).
        let typed = [RedisCommand("GET", "h:1"), RedisCommand("GET", "s:1")]
        let alone = try await self.redis.pipeline(typed)
        #expect(alone[0].errorMessage?.hasPrefix("WRONGTYPE") == true)
        let merged = ReadCoalescing(typed)
        #expect(merged.replies(try await self.redis.pipeline(merged.commands)) == [.null, alone[1]])
    }
}
