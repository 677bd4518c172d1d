/// The Lua scripts that move due items into the target stream, atomically, so pumps can race safely.
public enum DelayedQueueScript {
    /// Moves due items of one or more queues, each in its layout. ARGV: now (ms), limit per queue, and
    /// the layouts as one letter per queue (`h` hashed, `c` compact). KEYS, per queue in that order:
    /// hashed: due zset, items hash, target stream; compact: due zset (the member is the message),
    /// target stream. On Redis Cluster all of one call's keys are in one slot (one partition's
    /// queues). Returns the number moved from each queue.
    ///
    /// Each queue costs one ZRANGEBYSCORE, then per item only its XADD: the items' messages are read
    /// with one HMGET and removed with one ZREM (and one HDEL), each naming every moved id (in chunks,
    /// so a large limit cannot overflow Lua's stack with `unpack`). Redis counts every command a
    /// script runs, so a per-item HGET, ZREM and HDEL would cost four commands an item instead of one.
    public static let release = RedisScript(
        """
        local function each_chunk(list, body)
            for i = 1, #list, 500 do
                body(unpack(list, i, math.min(i + 499, #list)))
            end
        end
        local counts = {}
        local k = 1
        for q = 1, #ARGV[3] do
            local moved = 0
            if string.sub(ARGV[3], q, q) == 'h' then
                local due, items, target = KEYS[k], KEYS[k + 1], KEYS[k + 2]
                k = k + 3
                local ids = redis.call('ZRANGEBYSCORE', due, '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
                if #ids > 0 then
                    local messages = {}
                    each_chunk(ids, function(...)
                        for _, message in ipairs(redis.call('HMGET', items, ...)) do messages[#messages + 1] = message end
                    end)
                    for i = 1, #ids do
                        -- An id without a message (a cancel raced in half-way) is dropped, as before.
                        if messages[i] then
                            redis.call('XADD', target, '*', 'e', messages[i])
                            moved = moved + 1
                        end
                    end
                    each_chunk(ids, function(...) redis.call('ZREM', due, ...) end)
                    each_chunk(ids, function(...) redis.call('HDEL', items, ...) end)
                end
            else
                local due, target = KEYS[k], KEYS[k + 1]
                k = k + 2
                local items = redis.call('ZRANGEBYSCORE', due, '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
                for _, item in ipairs(items) do
                    redis.call('XADD', target, '*', 'e', item)
                end
                if #items > 0 then each_chunk(items, function(...) redis.call('ZREM', due, ...) end) end
                moved = #items
            end
            counts[#counts + 1] = moved
        end
        return counts
        """)

    /// The due members of one or more compact queues, to be converted before they are moved
    /// (`releaseConverted`): one command for all of them, so that an idle poll costs what the release
    /// script's does. KEYS: due zsets. ARGV: now (ms), limit per queue. Returns a list per queue.
    public static let due = RedisScript(
        """
        local lists = {}
        for q = 1, #KEYS do
            lists[q] = redis.call('ZRANGEBYSCORE', KEYS[q], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
        end
        return lists
        """)

    /// Compact members released in another form (`DelayedQueue.releasedAs`), for one or more queues in
    /// one command (as the read, `due`, took them). KEYS: each queue's due zset and target stream. ARGV:
    /// how many members each queue has here, then every queue's pairs of member and the message it
    /// becomes. A member is moved only when this run's ZREM removes it: a racing pump that read it too
    /// finds it gone. Returns the number moved from each queue.
    public static let releaseConverted = RedisScript(
        """
        local queues = #KEYS / 2
        local counts = {}
        local a = queues + 1
        for q = 1, queues do
            local moved = 0
            for i = 1, tonumber(ARGV[q]) do
                if redis.call('ZREM', KEYS[2 * q - 1], ARGV[a]) == 1 then
                    redis.call('XADD', KEYS[2 * q], '*', 'e', ARGV[a + 1])
                    moved = moved + 1
                end
                a = a + 2
            end
            counts[q] = moved
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
