import RedisStreams
import Synchronization
import TestSupport
import Testing

/// A batch is committed on the node it was read from, or not at all. After a failover the new primary
/// may lack entries the old one took after its last replication; a commit resent there would stand
/// while their redelivery (the client's retry) made the same decisions again: a network fault run
/// found a conversion attributed twice that way. A slot moved between a read and its commit stands in
/// for the failover here: both change the node serving the partition under the worker.
@Suite("Commits pinned to the node a batch was read from, on a real Redis Cluster", .serialized)
struct ClusterPinnedCommitTests {
    @Test("a transaction pinned to a node is not sent to the slot's new owner; pinned to the owner, it runs")
    func pinnedTransaction() async throws {
        let cluster = try await RedisCluster.start()
        defer { cluster.stop() }
        let redis = cluster.connect()
        let key = "{pinned}:total"
        let slot = ClusterSlot.slot(of: key)
        _ = try await redis.send(RedisCommand("SET", key, "1"))
        let read = try #require(try await redis.answeringNodes(of: [key]).first ?? nil)
        let source = try await cluster.owner(ofSlot: slot)
        #expect(read.hasSuffix(":\(source)"), "the node that answered the last call: \(read)")

        let target = try #require(await cluster.primaries.first { $0 != source })
        try await cluster.moveSlot(slot, to: target)
        let write = [RedisCommand("MULTI"), RedisCommand("SET", key, "2"), RedisCommand("EXEC")]
        await #expect {
            _ = try await redis.pipeline(write, onlyOn: read)
        } throws: { error in
            (error as? RedisError)?.code == .redirected
        }
        #expect(try await redis.answeringNodes(of: [key]) == [read], "a redirect is no answer")
        #expect(try await redis.send(RedisCommand("GET", key)).string == "1", "nothing of it ran, on either node")

        // The map learned the new owner from the redirect.
        let owner = try #require(try await redis.servingNodes(of: [key]).first ?? nil)
        #expect(owner.hasSuffix(":\(target)"))
        #expect(try await redis.pipeline(write, onlyOn: owner).last == .array([.status("OK")]))
        #expect(try await redis.send(RedisCommand("GET", key)).string == "2")
        #expect(try await redis.answeringNodes(of: [key]) == [owner])
        // Unpinned, as before: resent to whichever node serves the slot.
        try await cluster.moveSlot(slot, to: source)
        #expect(try await redis.pipeline(write).last == .array([.status("OK")]))
        await redis.close()
    }

    /// Copies each entry to `out`; the first time it decides, moves the partition's slot to another
    /// primary first (what a failover does to the worker between its read and its commit).
    final class MovingStage: StreamStage {
        let cluster: RedisCluster
        let slot: Int
        let decisions = Mutex(0)

        init(cluster: RedisCluster, slot: Int) {
            self.cluster = cluster
            self.slot = slot
        }

        func reads(for batch: [StreamEntry]) -> StageReads { StageReads() }

        func decide(_ batch: [StreamEntry], state: [RedisReply]) async throws -> [StageOutcome] {
            if self.decisions.withLock({ count in
                count += 1
                return count == 1
            }) {
                let source = try await self.cluster.owner(ofSlot: self.slot)
                let target = try #require(await self.cluster.primaries.first { $0 != source })
                try await self.cluster.moveSlot(self.slot, to: target)
            }
            return batch.map { .write([StreamCommands.add("out:{moving}", message: $0.message)]) }
        }
    }

    @Test(
        "a batch whose partition moved after its read is not committed on the new owner; its consumer reads it again there at once"
    )
    func batchLeftWhenItsPartitionMoved() async throws {
        let cluster = try await RedisCluster.start()
        defer { cluster.stop() }
        let redis = cluster.connect()
        let stream = "in:{moving}"
        var configuration = StageWorkerConfiguration(
            group: "copier", consumer: "c1",
            partitions: [
                StreamPartition(stream: stream, attemptsKey: "copier:attempts:{moving}", deadLetterStream: "copier:dead:{moving}")
            ])
        configuration.partitionsShareTransactions = false
        configuration.idlePollMilliseconds = 5
        // Never claimed within the test: the left batch is taken up again by its own consumer at once.
        configuration.claimIdleMilliseconds = 600_000
        let stage = MovingStage(cluster: cluster, slot: ClusterSlot.slot(of: stream))
        let worker = StageWorker(
            configuration: configuration, stage: stage, connection: cluster.connect(), logger: .test("test.pinned"))
        _ = try await worker.processOnce()  // creates the group
        _ = try await append(["a", "b", "c"], to: stream, on: redis)

        #expect(try await worker.processOnce() == 3)
        #expect(try await streamLength("out:{moving}", on: redis) == 0, "nothing committed on the slot's new owner")
        let consumer = StreamConsumer(stream: stream, group: "copier", consumer: "c1")
        #expect(try await consumer.pendingCount(on: redis) == 3, "the entries still pending, where they moved with the slot")

        // A newer entry of the partition waits until the left ones are done: a device's events stay in order.
        _ = try await append(["d"], to: stream, on: redis)
        #expect(try await worker.processOnce() == 3, "its own pending entries, read on the slot's new owner")
        #expect(
            try await streamRecords("out:{moving}", on: redis).compactMap(\.message) == ["a", "b", "c"], "committed there, once")
        #expect(try await worker.processOnce() == 1)
        #expect(try await streamRecords("out:{moving}", on: redis).compactMap(\.message) == ["a", "b", "c", "d"])
        #expect(try await consumer.pendingCount(on: redis) == 0)
        #expect(stage.decisions.withLock { $0 } == 3, "the batch left once, decided again once, then the newer entry")
        await redis.close()
    }
}
