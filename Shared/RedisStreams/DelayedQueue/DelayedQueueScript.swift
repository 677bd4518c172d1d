/// The Lua scripts that move due items into the target stream, atomically, so pumps can race safely.
public enum DelayedQueueScript {
    /// Moves due items of one or more queues, each in its layout. ARGV: now (ms), limit per queue, and
    /// the layouts as one letter per queue (`h` hashed, `c` compact). KEYS, per queue in that order:
    /// hashed: due zset, items hash, target stream; compact: due zset (the member is the message),
    /// target stream. On Redis Cluster all of one call's keys are in one slot (one partition's
    /// queues). Returns the number moved from each queue.
    public static let release = RedisScript(
        """
        local counts = {}
        local k = 1
        for q = 1, #ARGV[3] do
            local moved = 0
            if string.sub(ARGV[3], q, q) == 'h' then
                local due, items, target = KEYS[k], KEYS[k + 1], KEYS[k + 2]
                k = k + 3
                local ids = redis.call('ZRANGEBYSCORE', due, '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
                for _, id in ipairs(ids) do
                    local item = redis.call('HGET', items, id)
                    if item then
                        redis.call('XADD', target, '*', 'e', item)
                        moved = moved + 1
                    end
                    redis.call('ZREM', due, id)
                    redis.call('HDEL', items, id)
                end
            else
                local due, target = KEYS[k], KEYS[k + 1]
                k = k + 2
                local items = redis.call('ZRANGEBYSCORE', due, '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
                for _, item in ipairs(items) do
                    redis.call('XADD', target, '*', 'e', item)
                    redis.call('ZREM', due, item)
                end
                moved = #items
            end
            counts[#counts + 1] = moved
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
