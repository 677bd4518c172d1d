import RedisStreams
import Synchronization
import TestSupport
import Testing

/// A worker over several partitions' streams: every entry is handled in its own partition (its output,
/// state, acknowledgement, attempt count and dead letter), whether partitions share transactions (one
/// Redis) or each batch stays in one partition (Redis Cluster).
@Suite("StageWorker over partitions")
struct PartitionedWorkerTests {
    let server: RedisServer
    let redis: RedisConnection
    static let partitions = 4

    init() async throws {
        self.server = try await RedisServer.start()
        self.redis = self.server.connect()
    }

    static func stream(_ partition: Int) -> String { "in:{p\(partition)}" }

    func configuration(shared: Bool) -> StageWorkerConfiguration {
        var configuration = StageWorkerConfiguration(
            group: "copier", consumer: "c1",
            partitions: (0..<Self.partitions).map {
                StreamPartition(
                    stream: Self.stream($0), attemptsKey: "copier:attempts:{p\($0)}", deadLetterStream: "copier:dead:{p\($0)}")
            })
        configuration.partitionsShareTransactions = shared
        configuration.blockMilliseconds = 50
        configuration.idlePollMilliseconds = 5
        configuration.batchSize = 40  // 50 per partition: the second read is 10 of each, one batch
        configuration.maxAttempts = 2
        // A failed entry is retried when claimed: at once here.
        configuration.claimIdleMilliseconds = 100
        configuration.claimIntervalMilliseconds = 0
        return configuration
    }

    /// Copies each message to `out:{pN}` of its entry's partition and records `state:{pN}:<message>`;
    /// fails messages starting with `poison`; remembers which partitions each batch held.
    final class PartitionStage: StreamStage {
        let batches = Mutex<[Set<Int>]>([])

        func reads(for batch: [StreamEntry]) -> StageReads { StageReads() }

        func decide(_ batch: [StreamEntry], state: [RedisReply]) async -> [StageOutcome] {
            self.batches.withLock { $0.append(Set(batch.map(\.partition))) }
            return batch.map { entry in
                let message = String(decoding: entry.message, as: UTF8.self)
                if message.hasPrefix("poison") { return .failed("poisoned") }
                return .write([
                    StreamCommands.add("out:{p\(entry.partition)}", message: entry.message),
                    RedisCommand("SET", "state:{p\(entry.partition)}:\(message)", entry.id),
                ])
            }
        }
    }

    /// 200 messages spread over the partitions (message i in partition i % 4), one poisoned in partition 2.
    func load() async throws -> [Int: [String]] {
        var byPartition: [Int: [String]] = [:]
        for (index, message) in numberedMessages(200).enumerated() {
            byPartition[index % Self.partitions, default: []].append(message)
        }
        byPartition[2, default: []].append("poison-2")
        for (partition, messages) in byPartition {
            _ = try await append(messages, to: Self.stream(partition), on: self.redis)
        }
        return byPartition
    }

    func run(shared: Bool) async throws -> PartitionStage {
        let stage = PartitionStage()
        let worker = StageWorker(
            configuration: self.configuration(shared: shared), stage: stage, connection: self.server.connect(),
            logger: .test("test.partitions"))
        let byPartition = try await self.load()
        let finished = try await eventually(every: .zero) {
            _ = try await worker.processOnce()
            var done = try await streamLength("copier:dead:{p2}", on: self.redis) == 1
            for partition in 0..<Self.partitions {
                let expected = byPartition[partition, default: []].filter { !$0.hasPrefix("poison") }.count
                let copied = try await streamLength("out:{p\(partition)}", on: self.redis)
                done = done && copied == expected
            }
            return done
        }
        try #require(finished, "every partition copied and the poisoned entry dead-lettered")
        for partition in 0..<Self.partitions {
            let expected = byPartition[partition, default: []].filter { !$0.hasPrefix("poison") }
            #expect(try await streamRecords("out:{p\(partition)}", on: self.redis).compactMap(\.message) == expected)
            let consumer = StreamConsumer(stream: Self.stream(partition), group: "copier", consumer: "c1")
            #expect(try await consumer.pendingCount(on: self.redis) == 0, "nothing pending in partition \(partition)")
            #expect(try await self.redis.send(RedisCommand("HLEN", "copier:attempts:{p\(partition)}")) == .integer(0))
        }
        let dead = try #require(try await streamRecords("copier:dead:{p2}", on: self.redis).first)
        #expect(dead.message == "poison-2" && dead.text("stream") == Self.stream(2) && dead.text("error") == "poisoned")
        return stage
    }

    @Test("one Redis: batches span partitions, each entry handled in its own")
    func sharedTransactions() async throws {
        let stage = try await self.run(shared: true)
        #expect(stage.batches.withLock { $0 }.contains { $0.count > 1 }, "a read over every stream batches them together")
    }

    @Test("Redis Cluster: every batch (one transaction) stays in one partition")
    func onePartitionPerTransaction() async throws {
        let stage = try await self.run(shared: false)
        let batches = stage.batches.withLock { $0 }
        #expect(!batches.isEmpty && batches.allSatisfy { $0.count == 1 }, "\(batches)")
    }
}
