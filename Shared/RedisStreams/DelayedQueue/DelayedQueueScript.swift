/// The Lua script that moves due items into the target stream, atomically, so pumps can race safely.
public enum DelayedQueueScript {
    /// KEYS: due zset, items hash, target stream. ARGV: now (ms), limit. Returns the number moved.
    public static let source = """
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
        """

    /// SHA-1 of `source` (what SCRIPT LOAD returns); a test checks it, EVAL is the fallback if it drifts.
    public static let sha1 = "f55850d8be7834c0946dec06a1fc0547a06613be"
}
