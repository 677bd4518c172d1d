/// Messages held until a due time, then moved into a stream: held postbacks, window timers, settling
/// conversions, delivery retries.
///
/// Two layouts. `hashed`: `<name>:due` (sorted set, score = due time in ms, member = item id) plus
/// `<name>:items` (hash, item id -> message bytes); an item can be rescheduled or cancelled by id.
/// `compact`: `<name>:due` only, the member being the message itself: no id, no cancel, about half the
/// memory, for the millions of held postbacks (whose messages are unique: each holds its postback id).
/// Scheduling is plain commands so a stage can put it inside the transaction that acks its input;
/// releasing is one Lua script, so any number of pumps can run.
public struct DelayedQueue: Sendable {
    public enum Layout: Sendable { case hashed, compact }

    /// The queue's name, prefix of its keys.
    public let name: String
    /// The stream due items are appended to.
    public let target: String
    public let layout: Layout
    /// The sorted set of due times.
    public var dueKey: String { "\(self.name):due" }
    /// The hash of message bytes (hashed layout).
    public var itemsKey: String { "\(self.name):items" }

    /// A queue over its keys that releases into `target`.
    public init(name: String, target: String, layout: Layout = .hashed) {
        self.name = name
        self.target = target
        self.layout = layout
    }

    /// Hashed: ZADD and HSET for one item (scheduling an existing id again replaces its due time and
    /// message). Compact: ZADD of the message (`id` is not stored).
    public func schedule(id: String, dueAtMilliseconds: Int64, message: [UInt8]) -> [RedisCommand] {
        switch layout {
        case .hashed:
            [
                RedisCommand("ZADD", self.dueKey, String(dueAtMilliseconds), id),
                RedisCommand("HSET", self.itemsKey, id).appending(message),
            ]
        case .compact:
            [RedisCommand("ZADD", self.dueKey, String(dueAtMilliseconds)).appending(message)]
        }
    }

    /// Compact layout: swaps a held message for another due at `dueAtMilliseconds`, only while `old` is
    /// still held (once released it is on its way, and `new` must not follow it). One script, so it can
    /// sit inside the transaction that acknowledges the stage's input.
    public func replace(_ old: [UInt8], with new: [UInt8], dueAtMilliseconds: Int64) -> [RedisCommand] {
        precondition(layout == .compact, "a hashed delayed queue replaces by scheduling the same id again")
        return [
            RedisCommand("EVAL", DelayedQueueScript.replaceCompact, "1", self.dueKey).appending(old)
                .appending(String(dueAtMilliseconds)).appending(new)
        ]
    }

    /// ZREM and HDEL for one item; cancelling an unknown id does nothing. Hashed layout only.
    public func cancel(id: String) -> [RedisCommand] {
        precondition(layout == .hashed, "a compact delayed queue cannot cancel by id")
        return [RedisCommand("ZREM", self.dueKey, id), RedisCommand("HDEL", self.itemsKey, id)]
    }

    /// Atomically moves up to `limit` items due at or before `now`, earliest first; returns how many moved.
    public func releaseDue(now: Int64, limit: Int = 500, on connection: RedisConnection) async throws -> Int {
        try await Self.releaseDue([self], now: now, limit: limit, on: connection)[0]
    }

    /// `releaseDue` for several queues in one pipeline (one round trip per Redis node): how many moved
    /// from each, in order. Each queue's move is atomic. Queues whose keys share a hash slot (one
    /// partition's) go in one script run; `together`: all of them do (one Redis only, where a script may
    /// touch keys of several slots: one command however many queues and partitions).
    public static func releaseDue(
        _ queues: [DelayedQueue], now: Int64, limit: Int = 500, together: Bool = false, on connection: RedisConnection
    ) async throws -> [Int] {
        var groups: [[Int]] = []
        if together {
            groups = [Array(queues.indices)]
        } else {
            var bySlot: [Int: [Int]] = [:]
            for index in queues.indices { bySlot[ClusterSlot.slot(of: queues[index].dueKey), default: []].append(index) }
            groups = bySlot.keys.sorted().map { bySlot[$0]! }
        }
        let calls = groups.map { group in
            RedisScript.Call(
                keys: group.flatMap { index in
                    let queue = queues[index]
                    return queue.layout == .hashed ? [queue.dueKey, queue.itemsKey, queue.target] : [queue.dueKey, queue.target]
                },
                arguments: [
                    String(now), String(max(1, limit)), group.map { queues[$0].layout == .hashed ? "h" : "c" }.joined(),
                ].map { Array($0.utf8) })
        }
        var moved = [Int](repeating: 0, count: queues.count)
        for (group, reply) in zip(groups, try await DelayedQueueScript.release.runAll(calls, on: connection)) {
            let counts = reply.elements.compactMap(\.int)
            guard counts.count == group.count else {
                throw RedisError(.unexpectedReply, "delayed queue script returned \(reply)")
            }
            for (index, count) in zip(group, counts) { moved[index] = Int(count) }
        }
        return moved
    }

    /// ZCARD, then the earliest item with its score: a snapshot reads many queues in one pipeline and
    /// parses each pair with `state(count:first:)`.
    public var stateCommands: [RedisCommand] {
        [RedisCommand("ZCARD", self.dueKey), RedisCommand("ZRANGE", self.dueKey, "0", "0", "WITHSCORES")]
    }

    /// How many items wait and when the earliest is due (ms), from the replies to `stateCommands`.
    public static func state(count: RedisReply, first: RedisReply) -> (count: Int, nextDue: Int64?) {
        let parts = first.elements
        // Scores come back as doubles in text ("1700000000000" or "1.7e+12"): parse generally.
        let due = parts.count == 2 ? parts[1].string.flatMap(Double.init).map { Int64($0) } : nil
        return (Int(count.int ?? 0), due)
    }

    /// How many items are waiting.
    public func count(on connection: RedisConnection) async throws -> Int {
        let reply = try await connection.send(RedisCommand("ZCARD", self.dueKey))
        guard let count = reply.int else {
            throw RedisError(.unexpectedReply, "ZCARD returned \(reply)")
        }
        return Int(count)
    }

    /// The earliest due time in milliseconds, or nil when the queue is empty.
    public func nextDue(on connection: RedisConnection) async throws -> Int64? {
        let replies = try await connection.pipeline(self.stateCommands)
        return Self.state(count: replies[0], first: replies[1]).nextDue
    }

    /// Every waiting item's id and message (hashed layout): for scans such as device erasure, which
    /// then `cancel`s what it must.
    public func items(on connection: RedisConnection) async throws -> [(id: String, message: [UInt8])] {
        precondition(layout == .hashed, "a compact delayed queue's messages are its sorted-set members")
        let flat = try await connection.send(RedisCommand("HGETALL", self.itemsKey)).elements
        return stride(from: 0, to: flat.count - 1, by: 2).compactMap { index in
            flat[index].string.map { ($0, flat[index + 1].bytes ?? []) }
        }
    }
}
