/// Messages held until a due time, then moved into a stream: held postbacks, delivery retries.
///
/// Two keys: `<name>:due` (sorted set, score = due time in ms, member = item id) and `<name>:items`
/// (hash, item id -> message bytes). Scheduling is plain commands so a stage can put it inside the
/// transaction that acks its input; releasing is one Lua script, so any number of pumps can run.
public struct DelayedQueue: Sendable {
    /// The queue's name, prefix of its two keys.
    public let name: String
    /// The stream due items are appended to.
    public let target: String
    /// The sorted set of due times.
    public var dueKey: String { "\(self.name):due" }
    /// The hash of message bytes.
    public var itemsKey: String { "\(self.name):items" }

    /// A queue over `<name>:due` and `<name>:items` that releases into `target`.
    public init(name: String, target: String) {
        self.name = name
        self.target = target
    }

    /// ZADD and HSET for one item; scheduling an existing id again replaces its due time and message.
    public func schedule(id: String, dueAtMilliseconds: Int64, message: [UInt8]) -> [RedisCommand] {
        [
            RedisCommand("ZADD", self.dueKey, String(dueAtMilliseconds), id),
            RedisCommand("HSET", self.itemsKey, id).appending(message),
        ]
    }

    /// ZREM and HDEL for one item; cancelling an unknown id does nothing.
    public func cancel(id: String) -> [RedisCommand] {
        [RedisCommand("ZREM", self.dueKey, id), RedisCommand("HDEL", self.itemsKey, id)]
    }

    /// Atomically moves up to `limit` items due at or before `now`, earliest first; returns how many moved.
    public func releaseDue(now: Int64, limit: Int = 500, on connection: RedisConnection) async throws -> Int {
        let arguments = ["3", self.dueKey, self.itemsKey, self.target, String(now), String(max(1, limit))]
        let reply: RedisReply
        do {
            reply = try await connection.send(RedisCommand(["EVALSHA", DelayedQueueScript.sha1] + arguments))
        } catch let error as RedisError where error.serverErrorPrefix == "NOSCRIPT" {
            // Script cache empty (restart, SCRIPT FLUSH, failover): EVAL runs it and caches it again.
            reply = try await connection.send(RedisCommand(["EVAL", DelayedQueueScript.source] + arguments))
        }
        guard let moved = reply.int else {
            throw RedisError(.unexpectedReply, "delayed queue script returned \(reply)")
        }
        return Int(moved)
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
        let reply = try await connection.send(RedisCommand("ZRANGE", self.dueKey, "0", "0", "WITHSCORES"))
        let parts = reply.elements
        guard parts.count == 2 else { return nil }
        // Scores come back as doubles in text ("1700000000000" or "1.7e+12"): parse generally.
        guard let text = parts[1].string, let score = Double(text) else {
            throw RedisError(.unexpectedReply, "ZRANGE WITHSCORES returned \(reply)")
        }
        return Int64(score)
    }
}
