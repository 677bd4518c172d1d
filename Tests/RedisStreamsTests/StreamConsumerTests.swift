import RedisStreams
import TestSupport
import Testing

@Suite("StreamConsumer: groups, batch reads, claims")
struct StreamConsumerTests {
    let server: RedisServer
    let redis: RedisConnection

    init() async throws {
        self.server = try await RedisServer.start()
        self.redis = self.server.connect()
    }

    @Test("ensureGroup creates the stream and tolerates an existing group")
    func ensureGroup() async throws {
        let consumer = StreamConsumer(stream: "events", group: "verifier", consumer: "v1")
        try await consumer.ensureGroup(on: self.redis)
        try await consumer.ensureGroup(on: self.redis)
        #expect(try await self.redis.send(RedisCommand("EXISTS", "events")) == .integer(1))
        #expect(try await consumer.pendingCount(on: self.redis) == 0)
    }

    @Test("readNew honours COUNT and returns entries in order, then nothing")
    func batchRead() async throws {
        let consumer = StreamConsumer(stream: "events", group: "g", consumer: "c", batchSize: 10, blockMilliseconds: 50)
        try await consumer.ensureGroup(on: self.redis)
        let messages = numberedMessages(25)
        let ids = try await append(messages, to: "events", on: self.redis)

        var batches: [[StreamEntry]] = []
        for _ in 0..<4 {
            batches.append(try await consumer.readNew(on: self.redis))
        }
        #expect(batches.map(\.count) == [10, 10, 5, 0])
        let entries = batches.flatMap { $0 }
        #expect(entries.map(\.id) == ids)
        #expect(entries.map { String(decoding: $0.message, as: UTF8.self) } == messages)
        #expect(try await consumer.pendingCount(on: self.redis) == 25)

        _ = try await self.redis.send(StreamCommands.ack("events", group: "g", ids: ids))
        #expect(try await consumer.pendingCount(on: self.redis) == 0)
    }

    @Test("readNew wakes up for an entry added while it blocks")
    func blockingRead() async throws {
        let consumer = StreamConsumer(stream: "events", group: "g", consumer: "c", blockMilliseconds: 2_000)
        try await consumer.ensureGroup(on: self.redis)
        let writer = self.server.connect()
        async let read = consumer.readNew(on: self.redis)
        try await Task.sleep(for: .milliseconds(100))
        _ = try await append(["late"], to: "events", on: writer)
        let entries = try await read
        #expect(entries.map(\.message) == [Array("late".utf8)])
    }

    @Test("a BLOCK that is not well below the command timeout is refused")
    func blockLongerThanTimeout() async throws {
        let consumer = StreamConsumer(stream: "events", group: "g", consumer: "c", blockMilliseconds: 4_800)
        try await consumer.ensureGroup(on: self.redis)
        await #expect {
            try await consumer.readNew(on: self.redis)
        } throws: { error in
            (error as? RedisError)?.code == .invalidArgument
        }
    }

    @Test("claimStale takes over idle entries of another consumer and acks deleted ones")
    func claimStale() async throws {
        let dead = StreamConsumer(stream: "events", group: "g", consumer: "dead", batchSize: 10, blockMilliseconds: 0)
        let alive = StreamConsumer(stream: "events", group: "g", consumer: "alive", batchSize: 10, blockMilliseconds: 0)
        try await dead.ensureGroup(on: self.redis)
        let ids = try await append(numberedMessages(5), to: "events", on: self.redis)
        #expect(try await dead.readNew(on: self.redis).count == 5)
        // One pending entry disappears from the stream (trimmed or deleted by an operator).
        _ = try await self.redis.send(RedisCommand("XDEL", "events", ids[2]))
        _ = try await self.redis.send(RedisCommand("HSET", dead.attemptsKey, ids[2], "1"))

        let early = try await alive.claimStale(minIdleMilliseconds: 60_000, startingAt: "0-0", on: self.redis)
        #expect(early.ids.isEmpty)
        try await Task.sleep(for: .milliseconds(60))
        let claim = try await alive.claimStale(minIdleMilliseconds: 50, startingAt: "0-0", on: self.redis)

        #expect(claim.ids == [ids[0], ids[1], ids[3], ids[4]])
        // Redis 7.0 reports a deleted entry on the first scan that meets it, whatever its idle time.
        #expect(early.deletedIDs + claim.deletedIDs == [ids[2]])
        #expect(claim.isScanComplete)
        #expect(try await alive.pendingCount(on: self.redis) == 4)
        #expect(try await self.redis.send(RedisCommand("HLEN", dead.attemptsKey)) == .integer(0))
        let owners = try await self.redis.send(RedisCommand("XPENDING", "events", "g", "-", "+", "10"))
        #expect(owners.elements.allSatisfy { $0.elements[1].string == "alive" })
    }
}
