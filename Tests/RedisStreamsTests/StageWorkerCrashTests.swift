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
