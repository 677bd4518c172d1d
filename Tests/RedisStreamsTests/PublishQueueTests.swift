import NIOPosix
import RedisStreams
import TestSupport
import Testing

/// ingest's write path: concurrent publishes share pipelined round trips, each answered in order, on a
/// real redis-server; over both kinds of connection (threads on a cluster, event loops on one server).
@Suite("PublishQueue: coalesced script calls and commands")
struct PublishQueueTests {
    /// Appends its argument to a list and answers the list's new length.
    static let script = RedisScript("return redis.call('RPUSH', KEYS[1], ARGV[1])")

    enum Links: CaseIterable, Sendable {
        case threads, eventLoops
    }

    /// A queue over `count` connections of `links`' kind (event-loop connections serve one node only).
    static func queue(
        _ links: Links, _ server: RedisServer, count: Int = 1, script: RedisScript = Self.script, replicas: Int = 0,
        waitMilliseconds: Int64 = 0, oneNode: Bool = true
    ) -> PublishQueue {
        switch links {
        case .threads:
            return PublishQueue(
                script: script, connections: (0..<count).map { _ in server.connect() }, replicas: replicas,
                waitMilliseconds: waitMilliseconds, oneNode: oneNode)
        case .eventLoops:
            let connections = (0..<count).map { _ in
                EventLoopRedisConnection(
                    configuration: server.configuration, eventLoop: MultiThreadedEventLoopGroup.singleton.next(),
                    logger: .test("publish"))
            }
            return PublishQueue(
                script: script, connections: connections, replicas: replicas, waitMilliseconds: waitMilliseconds)
        }
    }

    static func write(_ value: Int, key: String = "list") -> PublishQueue.Write {
        PublishQueue.Write(call: RedisScript.Call(keys: [key], arguments: [Array(String(value).utf8)]), group: value % 4)
    }

    @Test(
        "200 concurrent requests over one connection: every write once, answered its own reply, in far fewer round trips",
        arguments: Links.allCases)
    func concurrentRequestsShareRoundTrips(links: Links) async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let queue = Self.queue(links, server)
        let lengths = try await withThrowingTaskGroup(of: (Int, [Int]).self) { group in
            for request in 0..<200 {
                group.addTask {
                    // Each request two writes, to show a request's outcomes stay together and in order.
                    let outcomes = try await queue.publish([Self.write(request), Self.write(request, key: "other")])
                    return (request, outcomes.map { Int($0.reply.int ?? -1) })
                }
            }
            var lengths: [Int: [Int]] = [:]
            for try await (request, replies) in group { lengths[request] = replies }
            return lengths
        }
        #expect(lengths.count == 200)
        #expect(Set(lengths.values.map { $0[0] }) == Set(1...200), "each write's own reply")
        #expect(Set(lengths.values.map { $0[1] }) == Set(1...200))
        let list = try await server.connect().send(RedisCommand("LRANGE", "list", "0", "-1")).elements.compactMap(\.string)
        #expect(list.count == 200 && Set(list) == Set((0..<200).map(String.init)), "every write exactly once")
        // Their own reply says where each landed: the list holds each request's value at that place.
        for (request, replies) in lengths { #expect(list[replies[0] - 1] == String(request)) }
        #expect(queue.roundTrips < 200, "coalesced: \(queue.roundTrips) round trips for 200 requests")
        #expect(queue.delays().queued == .zero && queue.delays().inFlight == .zero, "idle again")
    }

    @Test("a request on an event loop makes its round trip on that loop's connection while it is idle")
    func requestsPreferTheirOwnLoopsConnection() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        try #require(loops.count >= 2, "the singleton group has one loop per core")
        let connections = loops.prefix(2).map {
            EventLoopRedisConnection(configuration: server.configuration, eventLoop: $0, logger: .test("publish"))
        }
        let queue = PublishQueue(script: Self.script, connections: connections, replicas: 0, waitMilliseconds: 0)
        // CLIENT ID answers the id of the connection it went over.
        let clientID = PublishQueue.Write(command: RedisCommand("CLIENT", "ID"), group: 0)
        var seen: [[Int64]] = []
        for loop in loops.prefix(2) {
            let ids = try await withTaskExecutorPreference(EventLoopTaskExecutor(loop)) {
                var ids: [Int64] = []
                for _ in 0..<20 { ids.append(try await queue.publish([clientID])[0].reply.int ?? -1) }
                return ids
            }
            seen.append(ids)
        }
        #expect(Set(seen[0]).count == 1 && Set(seen[1]).count == 1, "one connection per loop: \(seen)")
        #expect(seen[0][0] != seen[1][0], "each loop its own")
    }

    @Test("a server that lost its scripts (SCRIPT FLUSH, a restart) is sent the source again", arguments: Links.allCases)
    func noScriptIsRecovered(links: Links) async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let queue = Self.queue(links, server, count: 2)
        #expect(try await queue.publish([Self.write(1)])[0].reply.int == 1)
        _ = try await server.connect().send(RedisCommand("SCRIPT", "FLUSH"))
        let outcomes = try await queue.publish([Self.write(2), Self.write(3)])
        #expect(outcomes.map(\.reply.int) == [2, 3])
    }

    @Test(
        "plain commands and script calls in one round trip: each answered its own reply, a flushed script sent again",
        arguments: Links.allCases)
    func plainCommandsMixWithScriptCalls(links: Links) async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        // Its own script value: whether the SHA is cached must not depend on the other tests.
        let script = RedisScript("return redis.call('RPUSH', KEYS[1], ARGV[1])")
        let queue = Self.queue(links, server, script: script)
        let plain = { (value: Int) in PublishQueue.Write(command: RedisCommand("RPUSH", "list", String(value)), group: 0) }
        let call = { (value: Int) in
            PublishQueue.Write(call: RedisScript.Call(keys: ["list"], arguments: [Array(String(value).utf8)]), group: 0)
        }
        #expect(try await queue.publish([plain(1), call(2)]).map(\.reply.int) == [1, 2], "in order")
        _ = try await server.connect().send(RedisCommand("SCRIPT", "FLUSH"))
        let outcomes = try await queue.publish([call(3), plain(4), call(5), plain(6)])
        // The plain commands ran in the first pass; the script calls that met NOSCRIPT ran after them.
        // Each outcome is still its own write's reply (the list's length after it).
        #expect(outcomes.map(\.reply.int) == [5, 3, 6, 4])
        let list = try await server.connect().send(RedisCommand("LRANGE", "list", "0", "-1")).elements.compactMap(\.string)
        #expect(list == ["1", "2", "4", "6", "3", "5"], "each write once")
    }

    @Test(
        "with replicas to wait for and none attached, every write reports 0 confirmations after the timeout",
        arguments: Links.allCases)
    func waitReportsConfirmations(links: Links) async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        for oneNode in links == .threads ? [true, false] : [true] {
            let queue = Self.queue(links, server, replicas: 1, waitMilliseconds: 50, oneNode: oneNode)
            let outcomes = try await queue.publish((0..<6).map { Self.write($0) })
            #expect(outcomes.count == 6)
            #expect(outcomes.allSatisfy { $0.replicas == 0 && $0.reply.int != nil }, "\(outcomes)")
        }
    }

    @Test("a round trip that cannot be made (Redis gone) fails its requests with a RedisError", arguments: Links.allCases)
    func unreachableRedisFailsTheRequests(links: Links) async throws {
        let server = try await RedisServer.start()
        let queue = Self.queue(links, server)
        #expect(try await queue.publish([Self.write(1)])[0].reply.int == 1)
        server.stop()
        await #expect(throws: RedisError.self) { try await queue.publish([Self.write(2)]) }
        #expect(queue.delays().inFlight == .zero, "the failed round trip is no longer counted as waiting")
    }
}
