/// The Lua scripts that move due items into the target stream, atomically, so pumps can race safely.
public enum DelayedQueueScript {
    /// Hashed layout. KEYS: due zset, items hash, target stream. ARGV: now (ms), limit. Returns the number moved.
    public static let hashed = RedisScript(
        """
        local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
        local moved = 0
        for _, id in ipairs(ids) do
            local item = redis.call('HGET', KEYS[2], id)
            if item then
                redis.call('XADD', KEYS[3], '*', 'e', item)
                moved = moved + 1
            end
            redis.call('ZREM', KEYS[1], id)
            redis.call('HDEL', KEYS[2], id)
        end
        return moved
        """)

    /// Compact layout: the member is the message. KEYS: due zset, target stream. ARGV: now (ms), limit.
    public static let compact = RedisScript(
        """
        local items = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
        for _, item in ipairs(items) do
            redis.call('XADD', KEYS[2], '*', 'e', item)
            redis.call('ZREM', KEYS[1], item)
        end
        return #items
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
