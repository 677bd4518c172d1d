import Foundation
import RedisStreams
import Synchronization
import TestSupport
import Testing

/// "Now" in milliseconds, moved by the test.
final class ManualClock: Sendable {
    private let now = Atomic<Int64>(0)
    func read() -> Int64 { self.now.load(ordering: .relaxed) }
    func set(_ value: Int64) { self.now.store(value, ordering: .relaxed) }
}

@Suite("DelayedQueue and its pump")
struct DelayedQueueTests {
    let server: RedisServer
    let redis: RedisConnection
    let queue = DelayedQueue(name: "held", target: "postbacks")

    init() async throws {
        self.server = try await RedisServer.start()
        self.redis = self.server.connect()
    }

    func schedule(_ items: [(id: String, due: Int64)]) async throws {
        let commands = items.flatMap {
            self.queue.schedule(id: $0.id, dueAtMilliseconds: $0.due, message: Array("msg-\($0.id)".utf8))
        }
        for reply in try await self.redis.pipeline(commands) {
            #expect(reply.errorMessage == nil)
        }
    }

    @Test("due items are released in due order, future items stay")
    func releasesDueItemsInOrder() async throws {
        try await self.schedule([("c", 300), ("a", 100), ("future1", 5_000), ("b", 200), ("future2", 9_000)])
        #expect(try await self.queue.count(on: self.redis) == 5)
        #expect(try await self.queue.nextDue(on: self.redis) == 100)

        #expect(try await self.queue.releaseDue(now: 1_000, on: self.redis) == 3)

        #expect(try await streamRecords("postbacks", on: self.redis).compactMap(\.message) == ["msg-a", "msg-b", "msg-c"])
        #expect(try await self.queue.count(on: self.redis) == 2)
        #expect(try await self.queue.nextDue(on: self.redis) == 5_000)
        #expect(try await self.redis.send(RedisCommand("HLEN", self.queue.itemsKey)) == .integer(2))
        #expect(try await self.queue.releaseDue(now: 1_000, on: self.redis) == 0)
        // Due exactly now counts as due.
        #expect(try await self.queue.releaseDue(now: 5_000, on: self.redis) == 1)
    }

    @Test(
        "several queues (a queue's partitions) released at once, each into its own target, one by one or together",
        arguments: [false, true])
    func releasesSeveralQueues(together: Bool) async throws {
        let queues =
            (0..<3).map { DelayedQueue(name: "held:{p\($0)}", target: "postbacks:{p\($0)}") }
            + [DelayedQueue(name: "compact:{p0}", target: "postbacks:{p0}", layout: .compact)]
        var commands: [RedisCommand] = []
        for (index, queue) in queues.enumerated() {
            for item in 0...index {
                commands += queue.schedule(
                    id: "i\(item)", dueAtMilliseconds: Int64(100 + item), message: Array("q\(index)-i\(item)".utf8))
            }
            commands += queue.schedule(id: "later", dueAtMilliseconds: 9_000, message: Array("q\(index)-later".utf8))
        }
        _ = try await self.redis.pipeline(commands)
        let moved = try await DelayedQueue.releaseDue(queues, now: 1_000, limit: 2, together: together, on: self.redis)
        #expect(moved == [1, 2, 2, 2], "each queue's own count, at most the limit each")
        #expect(try await streamRecords("postbacks:{p1}", on: self.redis).compactMap(\.message) == ["q1-i0", "q1-i1"])
        #expect(
            try await streamRecords("postbacks:{p0}", on: self.redis).compactMap(\.message) == ["q0-i0", "q3-i0", "q3-i1"])
        #expect(try await DelayedQueue.releaseDue(queues, now: 1_000, together: together, on: self.redis) == [0, 0, 1, 2])
    }

    @Test("limit bounds one release; cancel removes an item; empty queue has no next due")
    func limitAndCancel() async throws {
        try await self.schedule((0..<10).map { ("i\($0)", Int64($0)) })
        _ = try await self.redis.pipeline(self.queue.cancel(id: "i9"))
        #expect(try await self.queue.releaseDue(now: 100, limit: 4, on: self.redis) == 4)
        #expect(try await self.queue.releaseDue(now: 100, limit: 4, on: self.redis) == 4)
        #expect(try await self.queue.releaseDue(now: 100, limit: 4, on: self.redis) == 1)
        #expect(try await self.queue.count(on: self.redis) == 0)
        #expect(try await self.queue.nextDue(on: self.redis) == nil)
        #expect(try await streamLength("postbacks", on: self.redis) == 9)
    }

    @Test("a flushed script cache (restart, failover) loads the script again")
    func scriptCache() async throws {
        try await self.schedule([("x", 1)])
        #expect(try await self.queue.releaseDue(now: 10, on: self.redis) == 1)
        _ = try await self.redis.send(RedisCommand("SCRIPT", "FLUSH"))
        try await self.schedule([("y", 2)])
        #expect(try await self.queue.releaseDue(now: 10, on: self.redis) == 1)
        #expect(try await streamLength("postbacks", on: self.redis) == 2)
    }

    @Test("compact layout: the message is the member, released in due order, one key only")
    func compactLayout() async throws {
        let compact = DelayedQueue(name: "compact-\(UUID().uuidString)", target: "postbacks", layout: .compact)
        var commands: [RedisCommand] = []
        for (index, due) in [30, 10, 20].enumerated() {
            commands += compact.schedule(id: "ignored", dueAtMilliseconds: Int64(due), message: [0xC1, UInt8(index), 0xFF])
        }
        _ = try await self.redis.pipeline(commands)
        #expect(try await self.redis.send(RedisCommand("EXISTS", compact.itemsKey)) == .integer(0))
        #expect(try await compact.count(on: self.redis) == 3)
        #expect(try await compact.releaseDue(now: 25, on: self.redis) == 2)
        #expect(try await compact.nextDue(on: self.redis) == 30)
        let entries = try await self.redis.send(RedisCommand("XRANGE", "postbacks", "-", "+")).elements
        let messages = entries.map { $0.elements[1].elements[1] }
        #expect(messages == [.bulk([0xC1, 1, 0xFF]), .bulk([0xC1, 2, 0xFF])])
    }

    @Test(
        "compact layout released in another form: each member converted, racing pumps move each once, a refused member goes as it is"
    )
    func compactReleasedAs() async throws {
        let name = "converted-\(UUID().uuidString)"
        let compact = DelayedQueue(
            name: name, target: "\(name)-out", layout: .compact,
            releasedAs: { member in member.first == 0xC1 ? Array("{\"n\":\(member[1])}".utf8) : nil })
        var commands: [RedisCommand] = []
        for index in 0..<200 {
            commands += compact.schedule(
                id: "", dueAtMilliseconds: Int64(index), message: [0xC1, UInt8(index % 100), UInt8(index / 100)])
        }
        commands += compact.schedule(id: "", dueAtMilliseconds: 5, message: [0xEE])  // one the conversion refuses
        _ = try await self.redis.pipeline(commands)
        let connections = (0..<2).map { _ in self.server.connect() }
        // Both pumps read the same due members; each member's ZREM lets only one of them move it.
        var moved = 0
        while try await compact.count(on: self.redis) > 0 {
            async let first = compact.releaseDue(now: 1_000, limit: 50, on: connections[0])
            async let second = compact.releaseDue(now: 1_000, limit: 50, on: connections[1])
            moved += try await first + second
        }
        #expect(moved == 201)
        let messages = try await self.redis.send(RedisCommand("XRANGE", compact.target, "-", "+")).elements
            .map { $0.elements[1].elements[1] }
        #expect(messages.count == 201)
        #expect(messages.filter { $0 == .bulk([0xEE]) }.count == 1, "released as it is, for the consumer to dead-letter")
        let converted = messages.compactMap(\.string).filter { $0.hasPrefix("{") }
        #expect(converted.count == 200 && Set(converted).count == 100, "each of the 100 texts twice: two members each")
    }

    @Test("compact layout: a replacement swaps a held message, inside a transaction, and never follows a released one")
    func compactReplace() async throws {
        let compact = DelayedQueue(
            name: "compact-\(UUID().uuidString)", target: "replaced-\(UUID().uuidString)", layout: .compact)
        let (a, b, a2, b2): ([UInt8], [UInt8], [UInt8], [UInt8]) = ([0xC1, 1], [0xC1, 2], [0xC1, 1, 9], [0xC1, 2, 9])
        _ = try await self.redis.pipeline(
            compact.schedule(id: "", dueAtMilliseconds: 10, message: a)
                + compact.schedule(id: "", dueAtMilliseconds: 50, message: b))
        #expect(try await compact.releaseDue(now: 20, on: self.redis) == 1)  // a is on its way; b still held
        let replies = try await self.redis.pipeline(
            [RedisCommand("MULTI")] + compact.replace(a, with: a2, dueAtMilliseconds: 15)
                + compact.replace(b, with: b2, dueAtMilliseconds: 40) + [RedisCommand("EXEC")])
        #expect(replies.last?.elements == [.integer(0), .integer(1)])
        #expect(try await compact.count(on: self.redis) == 1)
        #expect(try await compact.nextDue(on: self.redis) == 40)
        #expect(try await compact.releaseDue(now: 100, on: self.redis) == 1)
        let entries = try await self.redis.send(RedisCommand("XRANGE", compact.target, "-", "+")).elements
        #expect(entries.map { $0.elements[1].elements[1] } == [.bulk(a), .bulk(b2)])
    }

    @Test("the pump releases items when the clock passes their due time")
    func pumpFollowsClock() async throws {
        let clock = ManualClock()
        try await self.schedule([("early", 1_000), ("late", 2_000)])
        let pump = DelayedQueuePump(
            queue: self.queue,
            connection: self.server.connect(),
            pollMilliseconds: 5,
            clock: { clock.read() },
            logger: .test("test.pump")
        )
        let task = Task { try await pump.run() }

        try await Task.sleep(for: .milliseconds(50))
        #expect(try await streamLength("postbacks", on: self.redis) == 0)
        clock.set(1_500)
        #expect(try await eventually { try await streamLength("postbacks", on: self.redis) == 1 })
        clock.set(2_000)
        #expect(try await eventually { try await streamLength("postbacks", on: self.redis) == 2 })

        task.cancel()
        try await task.value
    }

    @Test("two pumps racing on one queue release each of 2,000 items exactly once")
    func racingPumps() async throws {
        let items = (0..<2_000).map { (id: "p\($0)", due: Int64($0)) }
        try await self.schedule(items)
        let pumps = (0..<2).map { _ in
            DelayedQueuePump(
                queue: self.queue,
                connection: self.server.connect(),
                pollMilliseconds: 1,
                limit: 50,
                clock: { 10_000 },
                logger: .test("test.pump")
            )
        }
        let tasks = pumps.map { pump in Task { try await pump.run() } }

        #expect(try await eventually { try await self.queue.count(on: self.redis) == 0 })
        try await Task.sleep(for: .milliseconds(50))
        for task in tasks { task.cancel() }
        for task in tasks { try await task.value }

        let released = try await streamRecords("postbacks", on: self.redis).compactMap(\.message)
        #expect(released.count == 2_000)
        #expect(Set(released) == Set(items.map { "msg-\($0.id)" }))
        #expect(try await self.redis.send(RedisCommand("HLEN", self.queue.itemsKey)) == .integer(0))
    }
}
