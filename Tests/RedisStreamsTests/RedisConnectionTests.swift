import RedisStreams
import Synchronization
import TestSupport
import Testing

@Suite("RedisConnection against a real redis-server")
struct RedisConnectionTests {
    let server: RedisServer
    let redis: RedisConnection

    init() async throws {
        self.server = try await RedisServer.start()
        self.redis = self.server.connect()
    }

    @Test("status replies")
    func statusReplies() async throws {
        let pong = try await self.redis.send(RedisCommand("PING"))
        #expect(pong == .status("PONG"))
        #expect(pong.string == "PONG")
        #expect(pong.int == nil)
        #expect(try await self.redis.send(RedisCommand("SET", "k", "v")) == .status("OK"))
    }

    @Test("error replies: thrown by send, returned by pipeline, connection stays usable")
    func errorReplies() async throws {
        let replies = try await self.redis.pipeline([
            RedisCommand("NOSUCHCOMMAND"), RedisCommand("SET", "s", "x"), RedisCommand("LPUSH", "s", "y"),
        ])
        #expect(replies[0].errorMessage?.hasPrefix("ERR") == true)
        #expect(replies[1] == .status("OK"))
        #expect(replies[2].errorMessage?.hasPrefix("WRONGTYPE") == true)

        await #expect {
            try await self.redis.send(RedisCommand("LPUSH", "s", "y"))
        } throws: { error in
            let error = error as? RedisError
            return error?.code == .server && error?.serverErrorPrefix == "WRONGTYPE"
        }
        #expect(try await self.redis.send(RedisCommand("PING")) == .status("PONG"))
    }

    @Test("integer replies and integer parsing of strings")
    func integerReplies() async throws {
        let incremented = try await self.redis.send(RedisCommand("INCRBY", "n", "41"))
        #expect(incremented == .integer(41))
        #expect(incremented.int == 41)
        _ = try await self.redis.send(RedisCommand("SET", "text", "-42"))
        #expect(try await self.redis.send(RedisCommand("GET", "text")).int == -42)
        #expect(RedisReply.status("7").int == 7)
        #expect(RedisReply.bulk(Array("x".utf8)).int == nil)
    }

    @Test("bulk replies are binary safe")
    func bulkReplies() async throws {
        let allBytes = (0...255).map { UInt8($0) } + [0, 0, 13, 10, 0]
        let large = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }
        _ = try await self.redis.send(RedisCommand("SET", "binary").appending(allBytes))
        _ = try await self.redis.send(RedisCommand("SET", "large").appending(large))
        _ = try await self.redis.send(RedisCommand("SET", "empty", ""))

        let binary = try await self.redis.send(RedisCommand("GET", "binary"))
        #expect(binary == .bulk(allBytes))
        #expect(binary.string == nil, "invalid UTF-8 has no string form")
        #expect(try await self.redis.send(RedisCommand("GET", "large")).bytes == large)
        let empty = try await self.redis.send(RedisCommand("GET", "empty"))
        #expect(empty == .bulk([]))
        #expect(empty.string == "")
        // Binary keys work too.
        _ = try await self.redis.send(RedisCommand(bytes: [Array("SET".utf8), [0, 1, 2], [9]]))
        #expect(try await self.redis.send(RedisCommand(bytes: [Array("GET".utf8), [0, 1, 2]])) == .bulk([9]))
    }

    @Test("null replies: nil bulk and nil array")
    func nullReplies() async throws {
        let missing = try await self.redis.send(RedisCommand("GET", "missing"))
        #expect(missing == .null)
        #expect(missing.isNull)
        #expect(missing.elements.isEmpty)
        #expect(missing.string == nil)
        // BLPOP timing out answers with a nil multi-bulk (*-1).
        #expect(try await self.redis.send(RedisCommand("BLPOP", "missing-list", "0.01")) == .null)
    }

    @Test("array replies, empty and nested")
    func arrayReplies() async throws {
        _ = try await self.redis.send(RedisCommand("RPUSH", "list", "a", "b", "c"))
        let list = try await self.redis.send(RedisCommand("LRANGE", "list", "0", "-1"))
        #expect(list == .array([.bulk([97]), .bulk([98]), .bulk([99])]))
        #expect(list.elements.compactMap(\.string) == ["a", "b", "c"])
        #expect(try await self.redis.send(RedisCommand("LRANGE", "nothing", "0", "-1")) == .array([]))

        let nested = try await self.redis.send(
            RedisCommand("EVAL", "return {1, {2, 'two', {}}, {ok='fine'}, {err='bad thing'}}", "0")
        )
        #expect(
            nested
                == .array([
                    .integer(1),
                    .array([.integer(2), .bulk(Array("two".utf8)), .array([])]),
                    .status("fine"),
                    .error("bad thing"),
                ])
        )
    }

    @Test("a pipeline of 1000 commands answers in order")
    func pipelineOfThousand() async throws {
        let commands = (0..<1000).map { _ in RedisCommand("INCR", "counter") }
        let replies = try await self.redis.pipeline(commands)
        #expect(replies == (1...1000).map { RedisReply.integer(Int64($0)) })
        #expect(try await self.redis.pipeline([]) == [])
    }

    @Test("concurrent callers share one connection safely")
    func concurrentCallers() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<100 {
                group.addTask {
                    _ = try await self.redis.pipeline([RedisCommand("INCR", "shared"), RedisCommand("PING")])
                }
            }
            try await group.waitForAll()
        }
        #expect(try await self.redis.send(RedisCommand("GET", "shared")).int == 100)
    }

    @Test("an empty command is rejected without touching the connection")
    func emptyCommand() async throws {
        await #expect {
            try await self.redis.pipeline([RedisCommand("PING"), RedisCommand(bytes: [])])
        } throws: { error in
            (error as? RedisError)?.code == .invalidArgument
        }
        #expect(try await self.redis.send(RedisCommand("PING")) == .status("PONG"))
    }

    @Test("after the server drops the connection, the call in flight throws and the next reconnects")
    func reconnectsAfterIOError() async throws {
        let id = try #require(try await self.redis.send(RedisCommand("CLIENT", "ID")).int)
        // A blocking call is in flight on the socket when the server drops it.
        let redis = self.redis
        let blocked = Task { try await redis.send(RedisCommand("BLPOP", "nothing", "4")) }
        let admin = self.server.connect()
        var blocking = false
        for _ in 0..<200 where !blocking {
            try await Task.sleep(for: .milliseconds(10))
            blocking =
                try await admin.send(RedisCommand("CLIENT", "LIST", "ID", String(id))).string?.contains("cmd=blpop") == true
        }
        #expect(blocking)
        #expect(try await admin.send(RedisCommand("CLIENT", "KILL", "ID", String(id))) == .integer(1))
        await #expect {
            _ = try await blocked.value
        } throws: { error in
            (error as? RedisError)?.code == .io
        }
        #expect(try await self.redis.send(RedisCommand("PING")) == .status("PONG"))
        let newID = try await self.redis.send(RedisCommand("CLIENT", "ID")).int
        #expect(newID != id)
    }

    @Test("a WATCH whose socket the server dropped: the next call fails, nothing runs unguarded on a new socket")
    func lostWatchFailsTheNextCall() async throws {
        try await Self.expectLostWatchFailsTheNextCall(redis: self.redis, admin: self.server.connect())
    }

    /// WATCH, the server drops the socket, then MULTI … EXEC: refused, not run on a new socket; the
    /// next cycle watches again and commits. `RedisTLSTests` runs it over TLS too.
    static func expectLostWatchFailsTheNextCall(redis: RedisConnection, admin: RedisConnection) async throws {
        _ = try await redis.send(RedisCommand("SET", "watched", "1"))
        let id = try #require(try await redis.send(RedisCommand("CLIENT", "ID")).int)
        #expect(try await redis.pipeline([RedisCommand("WATCH", "watched"), RedisCommand("GET", "watched")]).last?.string == "1")
        #expect(try await admin.send(RedisCommand("CLIENT", "KILL", "ID", String(id))) == .integer(1))
        try await Task.sleep(for: .milliseconds(50))
        await #expect {
            try await redis.pipeline([RedisCommand("MULTI"), RedisCommand("SET", "watched", "2"), RedisCommand("EXEC")])
        } throws: { error in
            (error as? RedisError)?.code == .io
        }
        #expect(try await admin.send(RedisCommand("GET", "watched")).string == "1", "the transaction never ran")
        #expect(try await redis.pipeline([RedisCommand("WATCH", "watched"), RedisCommand("GET", "watched")]).last?.string == "1")
        let committed = try await redis.pipeline([
            RedisCommand("MULTI"), RedisCommand("SET", "watched", "3"), RedisCommand("EXEC"),
        ])
        #expect(committed.last == .array([.status("OK")]))
    }

    @Test("a large pipeline after the server reset the socket: an error or a new connection, never a signal")
    func survivesWriteToResetSocket() async throws {
        let id = try #require(try await self.redis.send(RedisCommand("CLIENT", "ID")).int)
        let admin = self.server.connect()
        _ = try await admin.send(RedisCommand("CLIENT", "KILL", "ID", String(id)))
        try await Task.sleep(for: .milliseconds(50))

        // Several megabytes take many write(2) calls: on a socket the peer reset, a write fails with
        // EPIPE, which must be an error, not a SIGPIPE killing the process.
        let payload = [UInt8](repeating: 120, count: 4 << 20)
        if let replies = try? await self.redis.pipeline((0..<4).map { RedisCommand("SET", "big\($0)").appending(payload) }) {
            #expect(replies == Array(repeating: .status("OK"), count: 4), "sent on a new connection")
        }
        #expect(try await self.redis.send(RedisCommand("PING")) == .status("PONG"))
    }

    @Test("connecting to a port nobody listens on throws connectionFailed")
    func connectionFailed() async throws {
        let configuration = RedisConfiguration(host: "127.0.0.1", port: try freeLoopbackPort())
        let connection = RedisConnection(configuration: configuration, logger: .test("test"))
        await #expect {
            try await connection.send(RedisCommand("PING"))
        } throws: { error in
            (error as? RedisError)?.code == .connectionFailed
        }
        await connection.close()
    }

    @Test("a closed connection refuses further calls")
    func closed() async throws {
        _ = try await self.redis.send(RedisCommand("PING"))
        await self.redis.close()
        await self.redis.close()
        await #expect {
            try await self.redis.send(RedisCommand("PING"))
        } throws: { error in
            (error as? RedisError)?.code == .closed
        }
    }

    @Test("the configured database is selected on connect")
    func selectsDatabase() async throws {
        var configuration = self.server.configuration
        configuration.database = 3
        let database3 = RedisConnection(configuration: configuration, logger: .test("test"))
        _ = try await database3.send(RedisCommand("SET", "where", "three"))
        #expect(try await database3.send(RedisCommand("GET", "where")).string == "three")
        #expect(try await self.redis.send(RedisCommand("GET", "where")) == .null)
        await database3.close()
    }

    @Test("blocking calls run on each connection's own thread, not the cooperative pool")
    func blockingCallsDoNotOccupyCooperativePool() async throws {
        // Judged by what Redis sees, not by a stopwatch, so a loaded machine cannot make it flaky: were
        // the blocking reads on the (2-core) cooperative pool, no more than two could wait at once (and
        // the rest would end after their 60 s, failing the test rather than hanging it).
        // Each read may wait far longer than the 5 s default allows while a loaded machine starts the
        // other seven: the reply is due only once the test releases them.
        var configuration = self.server.configuration
        configuration.commandTimeoutMilliseconds = 90_000
        let connections = (0..<8).map { _ in RedisConnection(configuration: configuration, logger: .test("test")) }
        final class Finished: Sendable { let count = Atomic<Int>(0) }
        let finished = Finished()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, connection) in connections.enumerated() {
                group.addTask {
                    _ = try await connection.send(RedisCommand("BLPOP", "never-\(index)", "60"))
                    finished.count.add(1, ordering: .relaxed)
                }
            }
            let blocked = try await eventually(timeout: .seconds(30)) {
                let clients = try await self.redis.send(RedisCommand("CLIENT", "LIST")).string ?? ""
                return clients.split(separator: "\n").filter { $0.contains("cmd=blpop") }.count == 8
            }
            #expect(blocked, "all eight blocking reads waited in Redis at once")
            #expect(finished.count.load(ordering: .relaxed) == 0, "this task ran while all eight reads were blocked")
            for index in 0..<8 { _ = try await self.redis.send(RedisCommand("LPUSH", "never-\(index)", "released")) }
            try await group.waitForAll()
        }
        #expect(finished.count.load(ordering: .relaxed) == 8)
        for connection in connections { await connection.close() }
    }
}
