import CHiredis

extension RedisReply {
    /// Deep-copies a hiredis reply tree (hiredis 0.14 produces only the six RESP2 types).
    init(copying reply: UnsafePointer<redisReply>) {
        let value = reply.pointee
        switch value.type {
        case REDIS_REPLY_STATUS:
            self = .status(Self.text(value))
        case REDIS_REPLY_ERROR:
            self = .error(Self.text(value))
        case REDIS_REPLY_INTEGER:
            self = .integer(Int64(value.integer))
        case REDIS_REPLY_STRING:
            self = .bulk(Self.bytes(value))
        case REDIS_REPLY_NIL:
            self = .null
        case REDIS_REPLY_ARRAY:
            self = .array(
                (0..<value.elements).map { index in
                    RedisReply(copying: UnsafePointer(value.element[index]!))
                }
            )
        default:
            self = .error("unsupported hiredis reply type \(value.type)")
        }
    }

    private static func bytes(_ reply: redisReply) -> [UInt8] {
        guard let string = reply.str, reply.len > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: string, count: reply.len))
    }

    private static func text(_ reply: redisReply) -> String {
        String(decoding: Self.bytes(reply), as: UTF8.self)
    }
}
