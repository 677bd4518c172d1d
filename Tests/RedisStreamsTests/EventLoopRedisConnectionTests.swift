import NIOPosix
import RedisStreams
import TestSupport
import Testing

/// The event-loop connection, the one Redis transport, on a real redis-server: every reply as Redis
/// sends it, and failures, drops and reconnects.
@Suite("EventLoopRedisConnection against a real redis-server")
struct EventLoopRedisConnectionTests {
    static func connection(_ configuration: RedisConfiguration) -> EventLoopRedisConnection {
        EventLoopRedisConnection(
            configuration: configuration, eventLoop: MultiThreadedEventLoopGroup.singleton.next(), logger: .test("loop"))
    }

    /// Every reply type, binary bytes, empty values, nesting and a pipeline larger than one socket read.
    static let commands: [RedisCommand] = [
        RedisCommand("PING"),
        RedisCommand("SET", "text", "-42"),
        RedisCommand("GET", "text"),
        RedisCommand("SET", "binary").appending((0...255).map { UInt8($0) } + [13, 10, 0, 13, 10]),
        RedisCommand("GET", "binary"),
        RedisCommand("SET", "empty", ""),
        RedisCommand("GET", "empty"),
        RedisCommand("GET", "missing"),
        RedisCommand("INCRBY", "n", "41"),
        RedisCommand("NOSUCHCOMMAND"),
        RedisCommand("LPUSH", "text", "x"),
        RedisCommand("XADD", "s", "*", "e", "1"),
        RedisCommand("XRANGE", "s", "-", "+"),
        RedisCommand("XREAD", "COUNT", "1", "STREAMS", "nothing", "0"),
        RedisCommand("SET", "large").appending((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }),
        RedisCommand("GET", "large"),
        RedisCommand(bytes: [Array("SET".utf8), [0, 1, 2], [9]]),
        RedisCommand(bytes: [Array("GET".utf8), [0, 1, 2]]),
    ]

    @Test("every reply type, binary, empty, nested, larger than a socket read: each the reply Redis documents")
    func repliesAreRedisOwn() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let replies = try await Self.connection(server.configuration).pipeline(Self.commands)
        try #require(replies.count == Self.commands.count)
        let binary = (0...255).map { UInt8($0) } + [13, 10, 0, 13, 10]
        let expected: [RedisReply?] = [
            .status("PONG"), .status("OK"), .bulk(Array("-42".utf8)), .status("OK"), .bulk(binary), .status("OK"), .bulk([]),
            .null, .integer(41), nil, nil, nil, nil, .null, .status("OK"), .bulk(Self.commands[14].arguments[2]),
            .status("OK"), .bulk([9]),
        ]
        for (index, (reply, want)) in zip(replies, expected).enumerated() {
            if let want { #expect(reply == want, "\(Self.commands[index].name)") }
        }
        #expect(replies[9].errorMessage?.hasPrefix("ERR unknown command") == true)
        #expect(replies[10].errorMessage?.hasPrefix("WRONGTYPE") == true)
        // A stream id, then the entry under it.
        let id = try #require(replies[11].string)
        #expect(id.contains("-"))
        #expect(
            replies[12] == .array([.array([.bulk(Array(id.utf8)), .array([.bulk(Array("e".utf8)), .bulk(Array("1".utf8))])])]))
    }

    @Test("10,000 commands in one pipeline, and concurrent callers from other threads: each its own replies")
    func largePipelinesAndConcurrentCallers() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let redis = Self.connection(server.configuration)
        let replies = try await redis.pipeline((0..<10_000).map { RedisCommand("INCR", "counter-\($0 % 7)") })
        // Command i is counter i % 7's (i / 7 + 1)-th increment: every reply in its place.
        #expect(replies.count == 10_000)
        #expect(replies.enumerated().allSatisfy { $0.element == .integer(Int64($0.offset / 7 + 1)) })
        let answers = try await withThrowingTaskGroup(of: (Int, RedisReply).self) { group in
            for caller in 0..<100 {
                group.addTask { (caller, try await redis.pipeline([RedisCommand("ECHO", "caller \(caller)")])[0]) }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(answers.count == 100 && answers.allSatisfy { $0.value.string == "caller \($0.key)" })
    }

    @Test("AUTH as an ACL user and SELECT before the first command; a wrong password fails without echoing it")
    func authenticatesAndSelects() async throws {
        let server = try await RedisServer.start(password: "right-password")
        defer { server.stop() }
        var configuration = server.configuration
        configuration.database = 3
        let redis = Self.connection(configuration)
        _ = try await redis.pipeline([RedisCommand("SET", "where", "three")])
        var zero = server.configuration
        zero.database = 0
        #expect(try await Self.connection(zero).pipeline([RedisCommand("GET", "where")]) == [.null], "written in db 3")
        #expect(try await redis.pipeline([RedisCommand("GET", "where")]) == [.bulk(Array("three".utf8))])

        var wrong = server.configuration
        wrong.password = "wrong-password"
        await #expect {
            try await Self.connection(wrong).pipeline([RedisCommand("PING")])
        } throws: { error in
            let error = error as? RedisError
            return error?.code == .connectionFailed && error?.message.contains("AUTH as default failed") == true
                && error?.message.contains("wrong-password") == false
        }
    }

    @Test("no server: connectionFailed naming the address")
    func refusedConnect() async throws {
        let port = try freeLoopbackPort()
        await #expect {
            try await Self.connection(RedisConfiguration(host: "127.0.0.1", port: port)).pipeline([RedisCommand("PING")])
        } throws: { error in
            (error as? RedisError)?.code == .connectionFailed
                && (error as? RedisError)?.message.contains("127.0.0.1:\(port)") == true
        }
    }

    @Test("a reply later than the command timeout fails with io; the next call reconnects")
    func lateReplyDropsTheSocket() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        var configuration = server.configuration
        configuration.commandTimeoutMilliseconds = 200
        let redis = Self.connection(configuration)
        let started = ContinuousClock.now
        await #expect {
            try await redis.pipeline([RedisCommand("BLPOP", "nothing", "30")])
        } throws: { error in
            (error as? RedisError)?.code == .io && (error as? RedisError)?.message.contains("no reply within 200 ms") == true
        }
        // Far below BLPOP's 30 s, however busy the machine: the timeout ended it.
        #expect(ContinuousClock.now - started < .seconds(15), "noticed at the command timeout, not at BLPOP's end")
        #expect(try await redis.pipeline([RedisCommand("PING")]) == [.status("PONG")])
    }

    @Test("the server closing the connection fails what waits with io; the next call reconnects")
    func serverDropReconnects() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let redis = Self.connection(server.configuration)
        let id = try await redis.pipeline([RedisCommand("CLIENT", "ID")])[0].int ?? -1
        _ = try await server.connect().send(RedisCommand("CLIENT", "KILL", "ID", String(id)))
        // The loop may not have seen the close before the next write: that one call fails, with io.
        var answered = false
        for _ in 0..<3 where !answered {
            do {
                answered = try await redis.pipeline([RedisCommand("PING")]) == [.status("PONG")]
            } catch let error as RedisError {
                #expect(error.code == .io, "\(error)")
            }
        }
        #expect(answered)
        #expect(try await redis.pipeline([RedisCommand("CLIENT", "ID")])[0].int != id, "a new connection")
    }

    @Test("refused before anything is sent: an empty command, keys in several slots (checksSlots); closed for good")
    func refusals() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        var configuration = server.configuration
        configuration.checksSlots = true
        let redis = Self.connection(configuration)
        await #expect { try await redis.pipeline([RedisCommand(bytes: [])]) } throws: {
            ($0 as? RedisError)?.code == .invalidArgument
        }
        await #expect { try await redis.pipeline([RedisCommand("MSET", "a", "1", "b", "2")]) } throws: {
            ($0 as? RedisError)?.code == .crossSlot
        }
        #expect(try await server.connect().send(RedisCommand("EXISTS", "a")) == .integer(0), "nothing was sent")
        #expect(try await redis.pipeline([RedisCommand("MSET", "{t}a", "1", "{t}b", "2")]) == [.status("OK")])
        await redis.close()
        await #expect { try await redis.pipeline([RedisCommand("PING")]) } throws: { ($0 as? RedisError)?.code == .closed }
    }
}
