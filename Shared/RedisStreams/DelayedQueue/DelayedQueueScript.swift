/// The Lua scripts that move due items into the target stream, atomically, so pumps can race safely.
public enum DelayedQueueScript {
    /// Hashed layout. KEYS: due zset, items hash, target stream, for each of one or more queues (all
    /// in one hash slot on Redis Cluster). ARGV: now (ms), limit per queue. Returns the number moved
    /// from each queue.
    public static let hashed = RedisScript(
        """
        local counts = {}
        for q = 1, #KEYS, 3 do
            local due, items, target = KEYS[q], KEYS[q + 1], KEYS[q + 2]
            local ids = redis.call('ZRANGEBYSCORE', due, '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
            local moved = 0
            for _, id in ipairs(ids) do
                local item = redis.call('HGET', items, id)
                if item then
                    redis.call('XADD', target, '*', 'e', item)
                    moved = moved + 1
                end
                redis.call('ZREM', due, id)
                redis.call('HDEL', items, id)
            end
            counts[#counts + 1] = moved
        end
        return counts
        """)

    /// Compact layout: the member is the message. KEYS: due zset, target stream, for each of one or
    /// more queues. ARGV: now (ms), limit per queue. Returns the number moved from each queue.
    public static let compact = RedisScript(
        """
        local counts = {}
        for q = 1, #KEYS, 2 do
            local items = redis.call('ZRANGEBYSCORE', KEYS[q], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
            for _, item in ipairs(items) do
                redis.call('XADD', KEYS[q + 1], '*', 'e', item)
                redis.call('ZREM', KEYS[q], item)
            end
            counts[#counts + 1] = #items
        end
        return counts
        """)

    /// Compact layout, `DelayedQueue.replace`: EVAL source (short, and EVAL cannot fail with NOSCRIPT
    /// inside a transaction). KEYS: due zset. ARGV: old member, due time (ms), new member. Returns 1 when
    /// the old member was still held and was swapped, else 0.
    public static let replaceCompact = """
        if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
            redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
            return 1
        end
        return 0
        """
}
