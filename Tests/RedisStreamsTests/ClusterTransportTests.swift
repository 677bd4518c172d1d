import Foundation
import RedisStreams
import TestSupport
import Testing

/// `RedisConnection` in cluster mode against a real six-node cluster: routing, redirects, resharding
/// and failover. Each test starts its own cluster (about two seconds), so none depends on what another
/// did to slots or nodes; serialized, as six servers per test are plenty for a small machine.
@Suite("Cluster transport against a real Redis Cluster", .serialized)
struct ClusterTransportTests {
    @Test("the slot function agrees with CLUSTER KEYSLOT on 6,000 keys")
    func slotsMatchServer() async throws {
        let cluster = try await RedisCluster.start()
        defer { cluster.stop() }
        let node = cluster.connect(port: cluster.ports[0])

        var random = KeyGenerator(seed: 0xC1_5107)
        var keys = Self.edgeCaseKeys
        keys += (0..<3_000).map { _ in random.key(from: Self.asciiScalars) }
        keys += (0..<3_000).map { _ in random.key(from: Self.unicodeScalars) }
        let replies = try await node.pipeline(keys.map { RedisCommand("CLUSTER", "KEYSLOT", $0) })

        let mismatches = zip(keys, replies).filter { key, reply in reply.int != Int64(ClusterSlot.slot(of: key)) }
        #expect(mismatches.isEmpty, "first mismatches: \(mismatches.prefix(5))")
        #expect(Set(keys).count > 5_000)
        await node.close()
    }

    @Test("a pipeline over every node: 2,048 SETs and GETs, each key stored on the primary owning its slot")
    func pipelineAcrossNodes() async throws {
        let cluster = try await RedisCluster.start()
        defer { cluster.stop() }
        let redis = cluster.connect()

        // One key for every eighth slot, so the pipeline reaches across the whole slot range.
        let keys = Self.keys(forSlots: Array(stride(from: 0, to: ClusterSlot.count, by: 8)), prefix: "spread")
        let sets = try await redis.pipeline(keys.map { RedisCommand("SET", $0, "value of \($0)") })
        #expect(sets.allSatisfy { $0 == .status("OK") })
        let gets = try await redis.pipeline(keys.map { RedisCommand("GET", $0) } + [RedisCommand("PING")])
        #expect(gets.map(\.string) == keys.map { "value of \($0)" } + ["PONG"])

        let topology = try await cluster.topology()
        let byOwner = Dictionary(grouping: keys) { topology.node(forSlot: ClusterSlot.slot(of: $0))?.port ?? 0 }
        #expect(Set(byOwner.keys) == Set(try await cluster.primaries))
        for (port, owned) in byOwner {
            let node = cluster.connect(port: port)
            let values = try await node.pipeline(owned.map { RedisCommand("GET", $0) })
            #expect(values.map(\.string) == owned.map { "value of \($0)" }, "keys on \(port)")
            #expect(try await node.send(RedisCommand("DBSIZE")).int == Int64(owned.count), "nothing else on \(port)")
            await node.close()
        }
        await redis.close()
    }

    @Test("transactions and scripts in one slot run; across slots they throw crossSlot and send nothing")
    func transactionsAndScripts() async throws {
        let cluster = try await RedisCluster.start()
        defer { cluster.stop() }
        let redis = cluster.connect()
        let balance = "{account}:balance"
        let log = "{account}:log"

        // Like the stage worker: WATCH with the reads, then MULTI … EXEC in a later pipeline.
        let read = try await redis.pipeline([RedisCommand("WATCH", balance, log), RedisCommand("GET", balance)])
        #expect(read == [.status("OK"), .null])
        let commit = try await redis.pipeline([
            RedisCommand("MULTI"), RedisCommand("SET", balance, "10"), RedisCommand("RPUSH", log, "credit 10"),
            RedisCommand("EXEC"),
        ])
        #expect(commit.last == .array([.status("OK"), .integer(1)]))

        // The WATCH still guards: another client's write in between makes EXEC answer nil.
        _ = try await redis.pipeline([RedisCommand("WATCH", balance), RedisCommand("GET", balance)])
        let other = cluster.connect()
        _ = try await other.send(RedisCommand("SET", balance, "99"))
        let conflicted = try await redis.pipeline([
            RedisCommand("MULTI"), RedisCommand("SET", balance, "11"), RedisCommand("EXEC"),
        ])
        #expect(conflicted.last == .null)
        #expect(try await redis.send(RedisCommand("GET", balance)).string == "99")

        // Scripts: EVAL in one slot, and RedisScript (SCRIPT LOAD goes to every primary) on all nodes.
        let sum = try await redis.send(
            RedisCommand("EVAL", "return redis.call('GET', KEYS[1]) .. '/' .. redis.call('LLEN', KEYS[2])", "2", balance, log)
        )
        #expect(sum.string == "99/1")
        let increment = RedisScript("return redis.call('INCRBY', KEYS[1], ARGV[1])")
        let counters = Self.keys(forSlots: [0, 8_000, 16_000], prefix: "counter")
        for key in counters {
            #expect(try await increment.run(keys: [key], arguments: [Array("5".utf8)], on: redis) == .integer(5))
        }

        // Plain reads ahead of a WATCH (a stage's lookups): each goes to its own slot's node, the unit to
        // its slot's, and the WATCH holds for the MULTI that follows.
        let lookups = counters.map { RedisCommand("GET", $0) }
        let merged = try await redis.pipeline(lookups + [RedisCommand("WATCH", balance), RedisCommand("GET", balance)])
        #expect(merged.prefix(3).map(\.string) == ["5", "5", "5"])
        #expect(Array(merged.suffix(2)) == [.status("OK"), .bulk(Array("99".utf8))])
        _ = try await other.send(RedisCommand("SET", balance, "98"))
        let guarded = try await redis.pipeline([RedisCommand("MULTI"), RedisCommand("SET", balance, "12"), RedisCommand("EXEC")])
        #expect(guarded.last == .null, "the WATCH sent after the lookups still guards")

        // Across slots: refused locally. No primary sees a single MULTI, SET, EVAL or DEL.
        let (a, b) = ("account:a", "account:b")
        try #require(ClusterSlot.slot(of: a) != ClusterSlot.slot(of: b))
        let before = try await Self.calls(of: ["multi", "exec", "set", "eval", "del"], in: cluster)
        for commands in [
            [RedisCommand("MULTI"), RedisCommand("SET", a, "1"), RedisCommand("SET", b, "1"), RedisCommand("EXEC")],
            [RedisCommand("WATCH", a, b)],
            [RedisCommand("EVAL", "return 1", "2", a, b)],
            [RedisCommand("SET", "{account}:c", "1"), RedisCommand("DEL", a, b)],
            // From its WATCH on, a pipeline is one unit: a read after it on another slot is refused.
            [RedisCommand("GET", b), RedisCommand("WATCH", a), RedisCommand("SET", b, "1")],
        ] {
            await Self.expectCrossSlot { try await redis.pipeline(commands) }
        }
        // A MULTI whose WATCH (in an earlier pipeline) was on another slot.
        _ = try await redis.pipeline([RedisCommand("WATCH", balance)])
        await Self.expectCrossSlot {
            try await redis.pipeline([RedisCommand("MULTI"), RedisCommand("SET", a, "1"), RedisCommand("EXEC")])
        }
        _ = try await redis.pipeline([RedisCommand("UNWATCH")])
        #expect(try await Self.calls(of: ["multi", "exec", "set", "eval", "del"], in: cluster) == before)
        #expect(try await redis.pipeline([RedisCommand("GET", a), RedisCommand("GET", b)]) == [.null, .null])
        // After UNWATCH, a transaction on that other slot is fine.
        let unwatched = try await redis.pipeline([RedisCommand("MULTI"), RedisCommand("SET", a, "1"), RedisCommand("EXEC")])
        #expect(unwatched.last == .array([.status("OK")]))

        await other.close()
        await redis.close()
    }

    @Test("checksSlots on a single node refuses what a cluster would, and only that")
    func slotGuardOnSingleNode() async throws {
        let server = try await RedisServer.start()
        var configuration = server.configuration
        configuration.checksSlots = true
        let checked = RedisConnection(configuration: configuration, logger: .test("test.checked"))
        let plain = server.connect()
        let (a, b) = ("account:a", "account:b")
        let crossSlotTransaction = [
            RedisCommand("MULTI"), RedisCommand("SET", a, "1"), RedisCommand("SET", b, "1"), RedisCommand("EXEC"),
        ]

        let before = try await Self.calls(of: ["multi", "exec", "set", "eval", "del"], on: plain)
        await Self.expectCrossSlot { try await checked.pipeline(crossSlotTransaction) }
        await Self.expectCrossSlot { try await checked.send(RedisCommand("EVAL", "return 1", "2", a, b)) }
        await Self.expectCrossSlot { try await checked.send(RedisCommand("DEL", a, b)) }
        _ = try await checked.pipeline([RedisCommand("WATCH", a), RedisCommand("GET", a)])
        await Self.expectCrossSlot {
            try await checked.pipeline([RedisCommand("MULTI"), RedisCommand("SET", b, "1"), RedisCommand("EXEC")])
        }
        _ = try await checked.send(RedisCommand("UNWATCH"))
        #expect(try await Self.calls(of: ["multi", "exec", "set", "eval", "del"], on: plain) == before)

        // One slot passes, and plain commands over several slots were never the guard's business.
        _ = try await checked.pipeline([RedisCommand("WATCH", "{t}a"), RedisCommand("GET", "{t}a")])
        let committed = try await checked.pipeline([
            RedisCommand("MULTI"), RedisCommand("SET", "{t}a", "1"), RedisCommand("SET", "{t}b", "2"), RedisCommand("EXEC"),
        ])
        #expect(committed.last == .array([.status("OK"), .status("OK")]))
        #expect(try await checked.pipeline([RedisCommand("SET", a, "1"), RedisCommand("SET", b, "1")]).count == 2)
        // Nor are plain reads ahead of a WATCH: only the unit from the WATCH on is held to one slot.
        #expect(
            try await checked.pipeline([RedisCommand("GET", b), RedisCommand("WATCH", a), RedisCommand("GET", a)]).count == 3)
        _ = try await checked.send(RedisCommand("UNWATCH"))

        // Without checksSlots nothing changes: the same transaction runs on one node.
        #expect(try await plain.pipeline(crossSlotTransaction).last == .array([.status("OK"), .status("OK")]))
        await checked.close()
        await plain.close()
        server.stop()
    }

    @Test("MOVED: after a slot moves, a stale connection reads, writes, watches and blocks on the new owner")
    func followsMoved() async throws {
        let cluster = try await RedisCluster.start()
        defer { cluster.stop() }
        let redis = cluster.connect()
        let reader = cluster.connect(label: "test.reader")
        let keys = (0..<20).map { "{moving}:\($0)" }
        let stream = "{moving}:stream"
        let slot = ClusterSlot.slot(of: stream)

        _ = try await redis.pipeline(keys.map { RedisCommand("SET", $0, "old \($0)") })
        _ = try await redis.send(RedisCommand("XGROUP", "CREATE", stream, "group", "$", "MKSTREAM"))
        #expect(try await Self.readGroup(stream, blockMilliseconds: 10, on: reader) == .null)

        let source = try await cluster.owner(ofSlot: slot)
        let target = try #require(try await cluster.primaries.first { $0 != source })
        try await cluster.moveSlot(slot, to: target)

        // Both connections still map the slot to the source: MOVED, then the new owner.
        #expect(try await redis.pipeline(keys.map { RedisCommand("GET", $0) }).map(\.string) == keys.map { "old \($0)" })
        let writes = try await redis.pipeline(keys.map { RedisCommand("SET", $0, "new \($0)") })
        #expect(writes.allSatisfy { $0 == .status("OK") })
        let onTarget = cluster.connect(port: target)
        #expect(try await onTarget.pipeline(keys.map { RedisCommand("GET", $0) }).map(\.string) == keys.map { "new \($0)" })
        let onSource = cluster.connect(port: source)
        #expect(try await onSource.send(RedisCommand("CLUSTER", "COUNTKEYSINSLOT", String(slot))).int == 0)

        // A blocked read whose slot moves away is answered MOVED by Redis and re-sent to the new owner.
        let blocked = Task { try await Self.readGroup(stream, blockMilliseconds: 3_000, on: reader) }
        try await Task.sleep(for: .milliseconds(200))
        try await cluster.moveSlot(slot, to: source)
        try await Task.sleep(for: .milliseconds(200))
        _ = try await redis.send(RedisCommand("XADD", stream, "*", "message", "after the move"))
        let entry = try await blocked.value
        #expect(entry.elements.first?.elements.last?.elements.first?.elements.last?.elements.last?.string == "after the move")

        // A WATCH unit hitting MOVED is re-sent whole: it carries everything it relies on.
        try await cluster.moveSlot(slot, to: target)
        let watched = try await redis.pipeline([RedisCommand("WATCH", keys[0]), RedisCommand("GET", keys[0])])
        #expect(watched == [.status("OK"), .bulk(Array("new \(keys[0])".utf8))])
        let committed = try await redis.pipeline([
            RedisCommand("MULTI"), RedisCommand("SET", keys[0], "committed"), RedisCommand("EXEC"),
        ])
        #expect(committed.last == .array([.status("OK")]))
        #expect(try await onTarget.send(RedisCommand("GET", keys[0])).string == "committed")

        for connection in [redis, reader, onTarget, onSource] { await connection.close() }
    }

    @Test("ASK: mid-migration, keys on both sides of the slot are read and written")
    func followsAsk() async throws {
        let cluster = try await RedisCluster.start()
        defer { cluster.stop() }
        let redis = cluster.connect()
        let keys = (0..<10).map { "{asking}:\($0)" }
        let slot = ClusterSlot.slot(of: keys[0])
        _ = try await redis.pipeline(keys.map { RedisCommand("SET", $0, "value \($0)") })

        let source = try await cluster.owner(ofSlot: slot)
        let target = try #require(try await cluster.primaries.first { $0 != source })
        let migration = try await cluster.beginMigration(ofSlot: slot, to: target)
        try await cluster.migrateKeys(migration, keys: Array(keys.prefix(5)))

        // Migrated keys: the source answers ASK; the others it still serves itself.
        let values = try await redis.pipeline(keys.map { RedisCommand("GET", $0) })
        #expect(values.map(\.string) == keys.map { "value \($0)" })
        #expect(try await redis.send(RedisCommand("GET", keys[1])).string == "value \(keys[1])")
        #expect(try await redis.send(RedisCommand("GET", keys[8])).string == "value \(keys[8])")
        // A new key is created on the target (the source does not have it, so it answers ASK).
        #expect(try await redis.send(RedisCommand("SET", "{asking}:new", "fresh")) == .status("OK"))
        let onTarget = cluster.connect(port: target)
        let asked = try await onTarget.pipeline([RedisCommand("ASKING"), RedisCommand("GET", "{asking}:new")])
        #expect(asked.last?.string == "fresh")

        // A transaction cannot run whole on either side mid-migration: redirected, nothing ran.
        await Self.expectRedirected {
            try await redis.pipeline([RedisCommand("WATCH", keys[0]), RedisCommand("GET", keys[0])])
        }

        // A multi-key read over both sides gets TRYAGAIN and backs off until the migration ends.
        let other = cluster.connect(label: "test.tryagain")
        let spanning = Task { try await other.send(RedisCommand("MGET", keys[0], keys[9])) }
        try await Task.sleep(for: .milliseconds(150))
        try await cluster.finishMigration(migration)
        #expect(try await spanning.value.elements.map(\.string) == ["value \(keys[0])", "value \(keys[9])"])
        await other.close()
        let after = try await redis.pipeline((keys + ["{asking}:new"]).map { RedisCommand("GET", $0) })
        #expect(after.map(\.string) == keys.map { "value \($0)" } + ["fresh"])
        #expect(try await onTarget.send(RedisCommand("CLUSTER", "COUNTKEYSINSLOT", String(slot))).int == 11)
        await onTarget.close()
        await redis.close()
    }

    @Test("a MULTI whose slot moved after its WATCH throws redirected, and the redo commits")
    func transactionRedirected() async throws {
        let cluster = try await RedisCluster.start()
        defer { cluster.stop() }
        let redis = cluster.connect()
        let key = "{ledger}:total"
        let slot = ClusterSlot.slot(of: key)
        _ = try await redis.send(RedisCommand("SET", key, "1"))

        #expect(try await redis.pipeline([RedisCommand("WATCH", key), RedisCommand("GET", key)]).last?.string == "1")
        let source = try await cluster.owner(ofSlot: slot)
        let target = try #require(try await cluster.primaries.first { $0 != source })
        try await cluster.moveSlot(slot, to: target)

        let write = [RedisCommand("MULTI"), RedisCommand("SET", key, "2"), RedisCommand("EXEC")]
        await Self.expectRedirected { try await redis.pipeline(write) }
        #expect(try await redis.send(RedisCommand("GET", key)).string == "1", "nothing of it ran")

        // The redo, on the same connection, reaches the new owner for both its pipelines.
        #expect(try await redis.pipeline([RedisCommand("WATCH", key), RedisCommand("GET", key)]).last?.string == "1")
        #expect(try await redis.pipeline(write).last == .array([.status("OK")]))
        let onTarget = cluster.connect(port: target)
        #expect(try await onTarget.send(RedisCommand("GET", key)).string == "2")
        await onTarget.close()
        await redis.close()
    }

    @Test("a WATCH whose connection dropped: its MULTI fails, and a later MULTI in another slot is redone, not crossSlot")
    func lostWatchIsNotACrossSlotError() async throws {
        let cluster = try await RedisCluster.start()
        defer { cluster.stop() }
        let redis = cluster.connect()
        let topology = try await cluster.topology()
        func key(_ prefix: String, where owner: (Int?) -> Bool) throws -> String {
            try #require(
                (0..<1_000).lazy.map { "{\(prefix)\($0)}:k" }.first {
                    owner(topology.node(forSlot: ClusterSlot.slot(of: $0))?.port)
                })
        }
        let watched = try key("w", where: { _ in true })
        let watchedPort = try #require(topology.node(forSlot: ClusterSlot.slot(of: watched))?.port)
        let other = try key("o", where: { $0 != watchedPort })
        _ = try await redis.pipeline([RedisCommand("SET", watched, "1"), RedisCommand("SET", other, "1")])

        #expect(try await redis.pipeline([RedisCommand("WATCH", watched), RedisCommand("GET", watched)]).last?.string == "1")
        // The server drops the connection that holds the WATCH (as a killed node would).
        let onWatched = cluster.connect(port: watchedPort)
        _ = try await onWatched.send(RedisCommand("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"))
        await onWatched.close()
        await #expect(throws: RedisError.self) {
            try await redis.pipeline([RedisCommand("MULTI"), RedisCommand("SET", watched, "2"), RedisCommand("EXEC")])
        }
        #expect(try await redis.send(RedisCommand("GET", watched)).string == "1", "nothing ran unguarded")

        // A batch that watches nothing, in another slot: redone (its caller reads again), then it commits.
        let write = [RedisCommand("MULTI"), RedisCommand("SET", other, "2"), RedisCommand("EXEC")]
        await Self.expectRedirected { try await redis.pipeline(write) }
        #expect(try await redis.pipeline(write).last == .array([.status("OK")]))
        #expect(try await redis.send(RedisCommand("GET", other)).string == "2")
        await redis.close()
    }

    @Test("failover: after a primary is killed, the same connection serves its slots from the promoted replica")
    func survivesFailover() async throws {
        let cluster = try await RedisCluster.start()
        defer { cluster.stop() }
        var configuration = cluster.configuration
        configuration.commandTimeoutMilliseconds = 2_000
        let redis = RedisConnection(configuration: configuration, logger: .test("test.failover"))

        // Kill the seed itself, so reloading the map has to fall back on the other nodes.
        let topology = try await cluster.topology()
        let victim = try #require(topology.primaries.first { $0.port == cluster.ports[0] } ?? topology.primaries.first).port
        let tag = try #require(
            (0..<1_000).lazy.map { "f\($0)" }.first { topology.node(forSlot: ClusterSlot.slot(of: $0))?.port == victim })
        let keys = (0..<100).map { "{\(tag)}:\($0)" }
        // WAIT in the same pipeline goes with the writes before it: the replica has them before the crash.
        let written = try await redis.pipeline(
            keys.map { RedisCommand("SET", $0, "kept \($0)") } + [RedisCommand("WAIT", "1", "2000")])
        #expect(written.last == .integer(1))

        // A key on a surviving primary: while the cluster is down (FAIL seen, no replica promoted yet) its
        // node answers CLUSTERDOWN, which the connection waits out.
        let survivor = try #require(
            (0..<1_000).lazy.map { "s\($0)" }.first { topology.node(forSlot: ClusterSlot.slot(of: $0))?.port != victim }
        )
        _ = try await redis.send(RedisCommand("SET", survivor, "alive"))

        let killed = ContinuousClock.now
        cluster.kill(port: victim)
        var errors: [String] = []
        var longest = Duration.zero
        var survivorErrors: [String] = []
        var survivorLongest = Duration.zero
        var recovered: Duration?
        while ContinuousClock.now - killed < .seconds(20) {
            let started = ContinuousClock.now
            do {
                if try await redis.send(RedisCommand("GET", keys[0])).string == "kept \(keys[0])" {
                    recovered = ContinuousClock.now - killed
                    break
                }
            } catch let error as RedisError {
                errors.append(error.serverErrorPrefix ?? "\(error.code)")
            }
            longest = max(longest, ContinuousClock.now - started)
            let survivorStarted = ContinuousClock.now
            do {
                #expect(try await redis.send(RedisCommand("GET", survivor)).string == "alive")
            } catch let error as RedisError {
                survivorErrors.append(error.serverErrorPrefix ?? "\(error.code)")
            }
            survivorLongest = max(survivorLongest, ContinuousClock.now - survivorStarted)
            try await Task.sleep(for: .milliseconds(50))
        }
        let promoted = try await cluster.waitForFailover(of: victim)
        print(
            "failover: served again \(recovered.map { "\($0)" } ?? "never") after SIGKILL; slowest failing call \(longest); "
                + "errors: \(Dictionary(grouping: errors, by: { $0 }).mapValues(\.count)); slowest call to a surviving "
                + "primary \(survivorLongest), its errors: \(survivorErrors)"
        )
        let recoveredAfter = try #require(recovered, "slots of the killed primary never served again")
        #expect(recoveredAfter < .seconds(20))
        #expect(longest < .seconds(5), "no call hangs past command timeout plus backoff")
        #expect(Set(errors).isSubset(of: ["connectionFailed", "io", "CLUSTERDOWN"]), "\(errors)")
        #expect(survivorLongest < .seconds(5))
        #expect(Set(survivorErrors).isSubset(of: ["CLUSTERDOWN"]), "\(survivorErrors)")

        // Everything written before the crash is there, and writes go to the promoted replica.
        #expect(try await redis.pipeline(keys.map { RedisCommand("GET", $0) }).map(\.string) == keys.map { "kept \($0)" })
        #expect(try await redis.send(RedisCommand("SET", keys[0], "after")) == .status("OK"))
        let onPromoted = cluster.connect(port: promoted)
        #expect(try await onPromoted.send(RedisCommand("GET", keys[0])).string == "after")
        await onPromoted.close()
        await redis.close()
    }

    // MARK: - Helpers

    static let edgeCaseKeys = [
        "", "{", "}", "{}", "}{", "{}{}", "{{}}", "{a", "a}", "a{b}c", "a{}b{c}", "{a}{b}", "a}b{c}d", "foo",
        "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{user1000}.following", "{user1000}.followers", "user1000",
        "123456789", "{p07}:device", "ключ{тег}", "😀{😀}",
    ]

    static let asciiScalars = Array(" !\"#$%&'()*+,-./0123456789:;<=>?@ABCXYZ[\\]^_`abcxyz{|}~{{}}".unicodeScalars)
    static let unicodeScalars =
        asciiScalars + ["é", "ß", "Ж", "я", "中", "文", "キ", "😀", "🚀", "\u{0301}", "\u{07FF}", "\u{FFFD}"]

    /// For each slot, the first `prefix:n` key that hashes to it.
    static func keys(forSlots slots: [Int], prefix: String) -> [String] {
        var wanted = Set(slots)
        var found: [Int: String] = [:]
        var index = 0
        while !wanted.isEmpty {
            let key = "\(prefix):\(index)"
            if wanted.remove(ClusterSlot.slot(of: key)) != nil { found[ClusterSlot.slot(of: key)] = key }
            index += 1
        }
        return slots.map { found[$0]! }
    }

    /// `calls` per command from `INFO commandstats`, summed over every primary of the cluster.
    static func calls(of names: [String], in cluster: RedisCluster) async throws -> [String: Int] {
        var total: [String: Int] = [:]
        for port in try await cluster.primaries {
            let node = cluster.connect(port: port)
            total.merge(try await Self.calls(of: names, on: node), uniquingKeysWith: +)
            await node.close()
        }
        return total
    }

    static func calls(of names: [String], on connection: RedisConnection) async throws -> [String: Int] {
        let info = try await connection.send(RedisCommand("INFO", "commandstats")).string ?? ""
        var calls: [String: Int] = Dictionary(uniqueKeysWithValues: names.map { ($0, 0) })
        for line in info.split(whereSeparator: \.isNewline) {
            for name in names where line.hasPrefix("cmdstat_\(name):calls=") {
                calls[name] = Int(line.dropFirst("cmdstat_\(name):calls=".count).prefix { $0.isNumber })
            }
        }
        return calls
    }

    static func readGroup(_ stream: String, blockMilliseconds: Int, on connection: RedisConnection) async throws
        -> RedisReply
    {
        try await connection.send(
            RedisCommand(
                "XREADGROUP", "GROUP", "group", "reader", "COUNT", "1", "BLOCK", String(blockMilliseconds),
                "STREAMS", stream, ">"
            )
        )
    }

    static func expectCrossSlot(_ body: () async throws -> some Any, sourceLocation: SourceLocation = #_sourceLocation)
        async
    {
        await #expect(sourceLocation: sourceLocation) {
            _ = try await body()
        } throws: { error in
            (error as? RedisError)?.code == .crossSlot
        }
    }

    static func expectRedirected(_ body: () async throws -> some Any, sourceLocation: SourceLocation = #_sourceLocation)
        async
    {
        await #expect(sourceLocation: sourceLocation) {
            _ = try await body()
        } throws: { error in
            (error as? RedisError)?.code == .redirected
        }
    }
}

/// Random keys from a fixed seed (SplitMix64), so a failing key can be reproduced.
private struct KeyGenerator {
    private var state: UInt64

    init(seed: UInt64) { self.state = seed }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A key of 0–24 scalars drawn from `scalars`.
    mutating func key(from scalars: [Unicode.Scalar]) -> String {
        let length = Int(self.next() % 25)
        var key = String.UnicodeScalarView()
        for _ in 0..<length { key.append(scalars[Int(self.next() % UInt64(scalars.count))]) }
        return String(key)
    }
}
