import RedisStreams
import TestSupport
import Testing

@Suite("StageWorker crash recovery")
struct StageWorkerCrashTests {
    @Test("consumer A dies mid-batch; B claims and finishes: every input exactly once, nothing pending")
    func deadConsumerIsClaimed() async throws {
        let server = try await RedisServer.start()
        let redis = server.connect()
        let messages = numberedMessages(300)
        _ = try await append(messages, to: "in", on: redis)

        var configurationA = StageWorkerConfiguration(stream: "in", group: "copier", consumer: "A")
        configurationA.batchSize = 50
        configurationA.blockMilliseconds = 50
        let (entered, enteredContinuation) = AsyncStream.makeStream(of: Int.self)
        let connectionA = server.connect()
        let workerA = StageWorker(
            configuration: configurationA,
            stage: HangingStage(inner: CopyStage(output: "out"), entered: enteredContinuation),
            connection: connectionA,
            logger: .test("test.worker.A")
        )
        let taskA = Task { try await workerA.run() }
        var iterator = entered.makeAsyncIterator()
        #expect(await iterator.next() == 50)

        // Kill A: its socket goes away first, then its task; the batch it held is still pending.
        await connectionA.close()
        taskA.cancel()
        await #expect(throws: RedisError.self) { try await taskA.value }
        let group = StreamConsumer(stream: "in", group: "copier", consumer: "observer")
        #expect(try await group.pendingCount(on: redis) == 50)
        #expect(try await streamLength("out", on: redis) == 0)

        var configurationB = StageWorkerConfiguration(stream: "in", group: "copier", consumer: "B")
        configurationB.batchSize = 50
        configurationB.blockMilliseconds = 50
        configurationB.claimIdleMilliseconds = 300
        configurationB.claimIntervalMilliseconds = 50
        let workerB = StageWorker(
            configuration: configurationB,
            stage: CopyStage(output: "out"),
            connection: server.connect(),
            logger: .test("test.worker.B")
        )
        let finished = try await eventually(every: .zero) {
            _ = try await workerB.processOnce()
            let written = try await streamLength("out", on: redis)
            let pending = try await group.pendingCount(on: redis)
            return written >= messages.count && pending == 0
        }
        #expect(finished)

        // A few more rounds must not produce anything new.
        for _ in 0..<3 { _ = try await workerB.processOnce() }
        let output = try await streamRecords("out", on: redis).compactMap(\.message)
        #expect(output.count == messages.count)
        #expect(Set(output) == Set(messages))
        #expect(try await group.pendingCount(on: redis) == 0)
    }
}

@Suite("StageWorker crash loops")
struct StageWorkerCrashLoopTests {
    /// Found by the hostile-input run: one event that crashed the verifier took its whole batch to the
    /// dead letters, valid events included, because every crash counted a delivery against all of them.
    @Test("a poison entry mid-batch stops consumer after consumer; only it is dead-lettered, every neighbour passes")
    func poisonTakesNoNeighbourAlong() async throws {
        let server = try await RedisServer.start()
        let redis = server.connect()
        let messages = numberedMessages(20)
        _ = try await append(messages, to: "in", on: redis)
        let poison = messages[7]
        let stops = PoisonStage.Stops()
        for round in 0..<8 {
            var configuration = StageWorkerConfiguration(stream: "in", group: "copier", consumer: "c\(round)")
            configuration.batchSize = 50
            configuration.blockMilliseconds = 50
            configuration.claimIdleMilliseconds = 1
            configuration.maxAttempts = 3
            let connection = server.connect()
            let worker = StageWorker(
                configuration: configuration,
                stage: PoisonStage(inner: CopyStage(output: "out"), poison: Array(poison.utf8), stops: stops),
                connection: connection, logger: .test("test.worker.poison"))
            let stopsBefore = stops.value
            let task = Task { try await worker.run() }
            // Either the poison stops this consumer (then it is killed, like in the test above), or
            // the work gets done: every neighbour copied and the poison dead-lettered.
            var done = false
            let settled = try await eventually {
                let copied = try await streamLength("out", on: redis)
                let dead = try await streamLength("copier:dead", on: redis)
                done = copied == messages.count - 1 && dead == 1
                return done || stops.value > stopsBefore
            }
            #expect(settled)
            await connection.close()
            task.cancel()
            _ = try? await task.value
            if done { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        let output = try await streamRecords("out", on: redis).compactMap(\.message)
        #expect(Set(output) == Set(messages.filter { $0 != poison }))
        #expect(output.count == messages.count - 1)
        let dead = try await streamRecords("copier:dead", on: redis)
        #expect(dead.map(\.message) == [poison])
        // The first read, then two claims: three deliveries, and the poison is set aside.
        #expect(stops.value == 3)
    }

    @Test("an entry whose consumers keep dying is dead-lettered instead of claimed again; its neighbours pass")
    func crashLoopIsDeadLettered() async throws {
        let server = try await RedisServer.start()
        let redis = server.connect()
        let messages = numberedMessages(5)
        let ids = try await append(messages, to: "in", on: redis)
        _ = try await redis.send(RedisCommand("XGROUP", "CREATE", "in", "copier", "0"))
        // Every entry goes to a consumer that then vanishes; the third one has done so four times already.
        _ = try await redis.send(RedisCommand("XREADGROUP", "GROUP", "copier", "gone", "COUNT", "10", "STREAMS", "in", ">"))
        _ = try await redis.send(RedisCommand("XCLAIM", "in", "copier", "gone", "0", ids[2], "RETRYCOUNT", "4"))

        var configuration = StageWorkerConfiguration(stream: "in", group: "copier", consumer: "B")
        configuration.blockMilliseconds = 50
        configuration.claimIdleMilliseconds = 1
        configuration.maxAttempts = 3
        let worker = StageWorker(
            configuration: configuration, stage: CopyStage(output: "out"), connection: server.connect(),
            logger: .test("test.worker.B"))
        try await Task.sleep(for: .milliseconds(5))
        _ = try await worker.processOnce()

        let output = try await streamRecords("out", on: redis).compactMap(\.message)
        #expect(Set(output) == Set(messages.enumerated().filter { $0.offset != 2 }.map(\.element)))
        let dead = try await streamRecords("copier:dead", on: redis)
        #expect(dead.count == 1)
        #expect(dead.first?.message == messages[2])
        #expect(dead.first?.text("error")?.contains("never acknowledged") == true)
        #expect(try await StreamConsumer(stream: "in", group: "copier", consumer: "x").pendingCount(on: redis) == 0)
    }
}

@Suite("StageWorker through Redis outages")
struct StageWorkerOutageTests {
    /// Consumer A of group `copier` on `in`, whose stage meets `outages` failures of `error` first;
    /// claims an entry as soon as it has been idle `claimIdle` ms; `MAX_ATTEMPTS` 3.
    func outageWorker(
        on server: RedisServer, outages: Int,
        error: RedisError = RedisError(.io, "reading a reply failed: Connection reset by peer"), claimIdle: Int = 1
    ) -> StageWorker<FailoverStage> {
        var configuration = StageWorkerConfiguration(stream: "in", group: "copier", consumer: "A")
        configuration.blockMilliseconds = 50
        configuration.claimIdleMilliseconds = claimIdle
        configuration.claimIntervalMilliseconds = 1
        configuration.maxAttempts = 3
        return StageWorker(
            configuration: configuration, stage: FailoverStage(inner: CopyStage(output: "out"), outages: outages, error: error),
            connection: server.connect(), logger: .test("test.worker.outages"))
    }

    /// Found by the cluster fault run: a verifier whose replay-marker claims failed in two failovers in
    /// a row dead-lettered a valid impression, as if it were poison.
    @Test("an entry whose worker keeps meeting Redis failures (and lives) is never dead-lettered nor counted")
    func survivedFailuresAreNotStops() async throws {
        let server = try await RedisServer.start()
        let redis = server.connect()
        let messages = numberedMessages(3)
        _ = try await append(messages, to: "in", on: redis)
        // Twice as many outages as attempts: the first read, then claim after claim.
        let worker = outageWorker(on: server, outages: 6)
        var failures = 0
        let done = try await eventually {
            do { _ = try await worker.processOnce() } catch is RedisError { failures += 1 }
            return try await streamLength("out", on: redis) == messages.count
        }
        #expect(done)
        #expect(failures == 6)
        let output = try await streamRecords("out", on: redis).compactMap(\.message)
        #expect(Set(output) == Set(messages))
        #expect(try await streamLength("copier:dead", on: redis) == 0)
        #expect(try await redis.send(RedisCommand("HLEN", "copier:attempts")).int == 0)
        #expect(try await StreamConsumer(stream: "in", group: "copier", consumer: "x").pendingCount(on: redis) == 0)
    }

    @Test("an error reply to what was sent is not an outage: an entry that meets one every time is dead-lettered")
    func errorRepliesStillEndInDeadLetters() async throws {
        let server = try await RedisServer.start()
        let redis = server.connect()
        _ = try await append(numberedMessages(1), to: "in", on: redis)
        let worker = outageWorker(
            on: server, outages: 1_000,
            error: RedisError(.server, "WRONGTYPE Operation against a key holding the wrong kind of value"))
        let dead = try await eventually {
            _ = try? await worker.processOnce()
            return try await streamLength("copier:dead", on: redis) == 1
        }
        #expect(dead, "kept pending forever")
    }

    @Test("which errors are Redis being unavailable")
    func unavailability() {
        #expect(RedisError(.io, "no reply within 5000 ms").isUnavailability)
        #expect(RedisError(.connectionFailed, "connect to 10.0.0.2:6379 failed").isUnavailability)
        #expect(RedisError(.server, "CLUSTERDOWN The cluster is down").isUnavailability)
        #expect(RedisError(.server, "a lookup failed: LOADING Redis is loading the dataset in memory").isUnavailability)
        #expect(!RedisError(.server, "WRONGTYPE Operation against a key holding the wrong kind of value").isUnavailability)
        #expect(!RedisError(.closed, "connection closed").isUnavailability)
    }

    @Test("after an outage a worker takes up its own left entries at once, and leaves another's and its count alone")
    func giveBackLeavesOthersAlone() async throws {
        let server = try await RedisServer.start()
        let redis = server.connect()
        let messages = numberedMessages(2)
        let ids = try await append(messages, to: "in", on: redis)
        let worker = outageWorker(on: server, outages: 1, claimIdle: 60_000)  // A claims nothing back in this test
        await #expect(throws: RedisError.self) { _ = try await worker.processOnce() }
        // Meanwhile the second entry moved on to B (a replica that claimed it), three deliveries counted.
        _ = try await redis.send(RedisCommand("XCLAIM", "in", "copier", "B", "0", ids[1], "RETRYCOUNT", "3"))
        // A's next call reads its own pending entries first: the first, not the one B holds now.
        #expect(try await worker.processOnce() == 1)
        #expect(try await streamRecords("out", on: redis).compactMap(\.message) == [messages[0]])

        let pending = try await redis.send(RedisCommand("XPENDING", "in", "copier", "-", "+", "10")).elements
        let counts = pending.compactMap { item -> String? in
            let fields = item.elements
            guard fields.count >= 4, let id = fields[0].string, let owner = fields[1].string, let count = fields[3].int
            else { return nil }
            return "\(id) \(owner) \(count)"
        }
        #expect(counts == ["\(ids[1]) B 3"])
    }
}
