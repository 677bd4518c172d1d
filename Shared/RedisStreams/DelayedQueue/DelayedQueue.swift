/// Messages held until a due time, then moved into a stream: held postbacks, window timers, settling
/// conversions, delivery retries.
///
/// Two layouts. `hashed`: `<name>:due` (sorted set, score = due time in ms, member = item id) plus
/// `<name>:items` (hash, item id -> message bytes); an item can be rescheduled or cancelled by id.
/// `compact`: `<name>:due` only, the member being the message itself: no id, no cancel, about half the
/// memory, for the millions of held postbacks (whose messages are unique: each holds its postback id).
/// A compact queue may store its members in a form of its own and release them as another
/// (`releasedAs`): the held postbacks wait as binary members and enter `postbacks` as JSON messages.
/// Scheduling is plain commands so a stage can put it inside the transaction that acks its input;
/// releasing is one Lua script, so any number of pumps can run.
public struct DelayedQueue: Sendable {
    public enum Layout: Sendable { case hashed, compact }

    /// The queue's name, prefix of its keys.
    public let name: String
    /// The stream due items are appended to.
    public let target: String
    public let layout: Layout
    /// Compact layout: the message a member becomes in `target`, or nil for a member this refuses
    /// (which is released as it is, so that the target's consumer dead-letters it with its reason and
    /// nothing waits behind it). Nil: members are released as they are.
    public let releasedAs: (@Sendable ([UInt8]) -> [UInt8]?)?
    /// The sorted set of due times.
    public var dueKey: String { "\(self.name):due" }
    /// The hash of message bytes (hashed layout).
    public var itemsKey: String { "\(self.name):items" }

    /// A queue over its keys that releases into `target`.
    public init(
        name: String, target: String, layout: Layout = .hashed, releasedAs: (@Sendable ([UInt8]) -> [UInt8]?)? = nil
    ) {
        precondition(releasedAs == nil || layout == .compact, "only a compact queue's members are converted on release")
        self.name = name
        self.target = target
        self.layout = layout
        self.releasedAs = releasedAs
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
    /// touch keys of several slots: one command however many queues and partitions). Queues that convert
    /// their members (`releasedAs`) are grouped alike, and take a read and, when something is due, a
    /// move (`releaseConverted`).
    public static func releaseDue(
        _ queues: [DelayedQueue], now: Int64, limit: Int = 500, together: Bool = false, on connection: RedisConnection
    ) async throws -> [Int] {
        let limit = max(1, limit)
        var moved = [Int](repeating: 0, count: queues.count)
        let converted = groups(queues, queues.indices.filter { queues[$0].releasedAs != nil }, together: together)
        for (index, count) in try await releaseConverted(queues, converted, now: now, limit: limit, on: connection) {
            moved[index] = count
        }
        let groups = groups(queues, queues.indices.filter { queues[$0].releasedAs == nil }, together: together)
        let calls = groups.map { group in
            RedisScript.Call(
                keys: group.flatMap { index in
                    let queue = queues[index]
                    return queue.layout == .hashed ? [queue.dueKey, queue.itemsKey, queue.target] : [queue.dueKey, queue.target]
                },
                arguments: [
                    String(now), String(limit), group.map { queues[$0].layout == .hashed ? "h" : "c" }.joined(),
                ].map { Array($0.utf8) })
        }
        for (group, reply) in zip(groups, try await DelayedQueueScript.release.runAll(calls, on: connection)) {
            let counts = reply.elements.compactMap(\.int)
            guard counts.count == group.count else {
                throw RedisError(.unexpectedReply, "delayed queue script returned \(reply)")
            }
            for (index, count) in zip(group, counts) { moved[index] = Int(count) }
        }
        return moved
    }

    /// `indices` of `queues` in groups one script run may touch: one hash slot's (a partition's), or
    /// all of them `together` (one Redis only).
    private static func groups(_ queues: [DelayedQueue], _ indices: [Int], together: Bool) -> [[Int]] {
        guard !together else { return indices.isEmpty ? [] : [indices] }
        var bySlot: [Int: [Int]] = [:]
        for index in indices { bySlot[ClusterSlot.slot(of: queues[index].dueKey), default: []].append(index) }
        return bySlot.keys.sorted().map { bySlot[$0]! }
    }

    /// Queues whose members change form on release (`groups` of `queues`' indices): each group's due
    /// members read by one script run (`DelayedQueueScript.due`), converted here, then moved by
    /// `DelayedQueueScript.releaseConverted` only where that run's ZREM removed them, so that racing
    /// pumps still release each exactly once. How many moved from each queue that had any.
    private static func releaseConverted(
        _ queues: [DelayedQueue], _ groups: [[Int]], now: Int64, limit: Int, on connection: RedisConnection
    ) async throws -> [(index: Int, moved: Int)] {
        let reads = groups.map { group in
            RedisScript.Call(
                keys: group.map { queues[$0].dueKey }, arguments: [Array(String(now).utf8), Array(String(limit).utf8)])
        }
        // One move per group that has due members, as one read took them: a pump's cycle costs two
        // commands per group however many of its queues had something due.
        var calls: [RedisScript.Call] = []
        var called: [[Int]] = []
        for (group, reply) in zip(groups, try await DelayedQueueScript.due.runAll(reads, on: connection)) {
            let lists = reply.elements
            guard lists.count == group.count else { throw RedisError(.unexpectedReply, "delayed queue script returned \(reply)") }
            var keys: [String] = []
            var counts: [[UInt8]] = []
            var pairs: [[UInt8]] = []
            var indices: [Int] = []
            for (index, list) in zip(group, lists) {
                let members = list.elements.compactMap(\.bytes)
                guard !members.isEmpty, let convert = queues[index].releasedAs else { continue }
                keys += [queues[index].dueKey, queues[index].target]
                counts.append(Array(String(members.count).utf8))
                for member in members { pairs += [member, convert(member) ?? member] }
                indices.append(index)
            }
            guard !indices.isEmpty else { continue }
            calls.append(RedisScript.Call(keys: keys, arguments: counts + pairs))
            called.append(indices)
        }
        var moved: [(index: Int, moved: Int)] = []
        for (indices, reply) in zip(called, try await DelayedQueueScript.releaseConverted.runAll(calls, on: connection)) {
            let counts = reply.elements.compactMap(\.int)
            guard counts.count == indices.count else {
                throw RedisError(.unexpectedReply, "delayed queue script returned \(reply)")
            }
            for (index, count) in zip(indices, counts) { moved.append((index, Int(count))) }
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
