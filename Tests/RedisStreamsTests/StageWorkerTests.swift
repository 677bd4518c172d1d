import RedisStreams
import TestSupport
import Testing

@Suite("StageWorker: batches, transactions, conflicts, dead letters")
struct StageWorkerTests {
    let server: RedisServer
    let redis: RedisConnection

    init() async throws {
        self.server = try await RedisServer.start()
        self.redis = self.server.connect()
    }

    func configuration(consumer: String = "c1") -> StageWorkerConfiguration {
        var configuration = StageWorkerConfiguration(stream: "in", group: "copier", consumer: consumer)
        configuration.blockMilliseconds = 50
        return configuration
    }

    /// Calls `processOnce` until `done` holds (checked after each call) or 10 s pass.
    func drive<S>(_ worker: StageWorker<S>, until done: () async throws -> Bool) async throws {
        let finished = try await eventually(every: .zero) {
            _ = try await worker.processOnce()
            return try await done()
        }
        #expect(finished, "worker did not finish in time")
    }

    @Test("1,000 messages: one output and one state key each, nothing left pending")
    func thousandMessages() async throws {
        let observer = CountingObserver()
        let worker = StageWorker(
            configuration: self.configuration(),
            stage: CopyStage(output: "out", deduplicate: true),
            connection: self.server.connect(),
            logger: .test("test.worker"),
            observer: observer
        )
        let messages = numberedMessages(1_000)
        _ = try await append(messages, to: "in", on: self.redis)

        try await self.drive(worker) { try await streamLength("out", on: self.redis) == 1_000 }

        let output = try await streamRecords("out", on: self.redis)
        #expect(output.compactMap(\.message) == messages)
        let stateKeys = messages.map { "state:" + $0 }
        #expect(try await self.redis.send(RedisCommand(["EXISTS"] + stateKeys)) == .integer(1_000))
        let consumer = StreamConsumer(stream: "in", group: "copier", consumer: "c1")
        #expect(try await consumer.pendingCount(on: self.redis) == 0)
        #expect(observer.totals.withLock { $0 } == .init(batches: 10, written: 1_000, failed: 0, deadLettered: 0))
    }

    @Test("a WATCHed key changed between read and EXEC: the batch is redone and written once")
    func watchConflictRedoesBatch() async throws {
        let stage = ConflictStage(output: "out", meddler: self.server.connect())
        let observer = CountingObserver()
        let worker = StageWorker(
            configuration: self.configuration(),
            stage: stage,
            connection: self.server.connect(),
            logger: .test("test.worker"),
            observer: observer
        )
        let ids = try await append(numberedMessages(5), to: "in", on: self.redis)

        #expect(try await worker.processOnce() == 5)

        #expect(stage.decisions.load(ordering: .relaxed) == 2)
        // Decided twice, committed once: only the committed decisions are counted, one per entry.
        #expect(
            observer.totals.withLock { $0.committed }
                == Array(repeating: StageCount("decided_total", [("counter", "1")]), count: 5))
        #expect(try await streamLength("out", on: self.redis) == 5)
        // The redo decided on the fresh value, not the one read before the change.
        let decided = try await self.redis.send(RedisCommand(["MGET"] + ids.map { "decided:\($0)" }))
        #expect(decided.elements.map(\.string) == Array(repeating: "1", count: 5))
        #expect(try await StreamConsumer(stream: "in", group: "copier", consumer: "c1").pendingCount(on: self.redis) == 0)
    }

    @Test("a failing message is dead-lettered after maxAttempts with its error; its neighbours pass")
    func poisonIsDeadLettered() async throws {
        var configuration = self.configuration()
        configuration.claimIdleMilliseconds = 100
        configuration.claimIntervalMilliseconds = 0
        configuration.maxAttempts = 3
        let stage = FailingStage(output: "out")
        let observer = CountingObserver()
        let worker = StageWorker(
            configuration: configuration,
            stage: stage,
            connection: self.server.connect(),
            logger: .test("test.worker"),
            observer: observer
        )
        let ids = try await append(["a", "b", "poison", "c", "d"], to: "in", on: self.redis)

        try await self.drive(worker) { try await streamLength("copier:dead", on: self.redis) == 1 }

        let dead = try #require(try await streamRecords("copier:dead", on: self.redis).first)
        #expect(dead.message == "poison")
        #expect(dead.text("error") == "poison message")
        #expect(dead.text("stream") == "in")
        #expect(dead.text("id") == ids[2])
        #expect(stage.attemptCount("poison") == 3)
        #expect(try await streamRecords("out", on: self.redis).compactMap(\.message) == ["a", "b", "c", "d"])
        #expect(try await StreamConsumer(stream: "in", group: "copier", consumer: "c1").pendingCount(on: self.redis) == 0)
        #expect(try await self.redis.send(RedisCommand("HLEN", "copier:attempts")) == .integer(0))
        #expect(observer.totals.withLock { $0.failed } == 3)
        #expect(observer.totals.withLock { $0.deadLettered } == 1)
    }

    @Test("an entry that fails and later succeeds leaves no attempt count behind")
    func retriedEntryCleansUpAttempts() async throws {
        var configuration = self.configuration()
        configuration.claimIdleMilliseconds = 100
        configuration.claimIntervalMilliseconds = 0
        let stage = FailingStage(output: "out", flakyTimes: 1)
        let worker = StageWorker(
            configuration: configuration,
            stage: stage,
            connection: self.server.connect(),
            logger: .test("test.worker")
        )
        _ = try await append(["x", "y"], to: "in", on: self.redis)

        #expect(try await worker.processOnce() == 2)
        #expect(try await self.redis.send(RedisCommand("HLEN", "copier:attempts")) == .integer(2))

        try await self.drive(worker) { try await streamLength("out", on: self.redis) == 2 }
        #expect(try await self.redis.send(RedisCommand("HLEN", "copier:attempts")) == .integer(0))
        #expect(try await streamLength("copier:dead", on: self.redis) == 0)
        #expect(stage.attemptCount("x") == 2)
    }

    @Test("a batch with nothing to write sends no MULTI/EXEC")
    func nothingToWriteSendsNoTransaction() async throws {
        var configuration = self.configuration()
        configuration.maxAttempts = 100
        let worker = StageWorker(
            configuration: configuration,
            stage: FailingStage(output: "out"),
            connection: self.server.connect(),
            logger: .test("test.worker")
        )
        _ = try await append(["poison", "poison"], to: "in", on: self.redis)
        _ = try await self.redis.send(RedisCommand("CONFIG", "RESETSTAT"))

        #expect(try await worker.processOnce() == 2)

        let stats = try #require(try await self.redis.send(RedisCommand("INFO", "commandstats")).string)
        #expect(!stats.contains("cmdstat_multi"))
        #expect(!stats.contains("cmdstat_exec"))
        #expect(stats.contains("cmdstat_hincrby:calls=2"))
    }

    /// Dead letters hold the failed messages (device identifiers included): kept
    /// `deadLetterRetentionMilliseconds`, by age alone, then trimmed.
    @Test("dead letters are trimmed by age")
    func deadLettersAreTrimmedByAge() async throws {
        var configuration = self.configuration()
        configuration.deadLetterRetentionMilliseconds = 60_000
        configuration.trimIntervalMilliseconds = 0
        let worker = StageWorker(
            configuration: configuration, stage: CopyStage(output: "out"), connection: self.server.connect(),
            logger: .test("test.worker"))
        // One dead letter from long ago (an explicit id: 1970), one from now.
        _ = try await self.redis.send(RedisCommand("XADD", "copier:dead", "1-1", "e", "old", "error", "x"))
        _ = try await self.redis.send(RedisCommand("XADD", "copier:dead", "*", "e", "recent", "error", "x"))
        _ = try await worker.processOnce()
        #expect(try await streamRecords("copier:dead", on: self.redis).compactMap(\.message) == ["recent"])
    }

    @Test("run() returns after cancellation, finishing the batch in hand")
    func runStopsOnCancellation() async throws {
        let worker = StageWorker(
            configuration: self.configuration(),
            stage: CopyStage(output: "out"),
            connection: self.server.connect(),
            logger: .test("test.worker")
        )
        let task = Task { try await worker.run() }
        _ = try await append(numberedMessages(10), to: "in", on: self.redis)
        #expect(try await eventually { try await streamLength("out", on: self.redis) == 10 })
        task.cancel()
        try await task.value
        #expect(try await StreamConsumer(stream: "in", group: "copier", consumer: "c1").pendingCount(on: self.redis) == 0)
    }

    @Test("a worker cancelled mid-batch still commits the batch in hand")
    func cancellationFinishesBatchInHand() async throws {
        let (entered, enteredContinuation) = AsyncStream.makeStream(of: Int.self)
        let worker = StageWorker(
            configuration: self.configuration(),
            stage: HangingStage(inner: CopyStage(output: "out"), entered: enteredContinuation),
            connection: self.server.connect(),
            logger: .test("test.worker")
        )
        _ = try await append(numberedMessages(10), to: "in", on: self.redis)
        let task = Task { try await worker.run() }
        var iterator = entered.makeAsyncIterator()
        #expect(await iterator.next() == 10)

        task.cancel()
        try await task.value

        #expect(try await streamLength("out", on: self.redis) == 10)
        #expect(try await StreamConsumer(stream: "in", group: "copier", consumer: "c1").pendingCount(on: self.redis) == 0)
    }
}
