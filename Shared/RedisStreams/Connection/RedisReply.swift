/// One RESP2 reply from Redis, copied out of hiredis so it outlives the reply object.
public enum RedisReply: Sendable, Equatable {
    /// A simple string such as `OK`, `PONG` or `QUEUED`.
    case status(String)
    /// An error reply, e.g. `ERR unknown command` or `BUSYGROUP ...`; the text includes its prefix.
    case error(String)
    /// An integer reply.
    case integer(Int64)
    /// A bulk string, binary safe.
    case bulk([UInt8])
    /// A nil bulk string or nil array (missing key, BLOCK timeout, EXEC aborted by WATCH).
    case null
    /// An array reply, possibly nested.
    case array([RedisReply])

    /// A bulk string decoded as UTF-8 (nil when it is not valid UTF-8), or a status text.
    public var string: String? {
        switch self {
        case .bulk(let bytes): String(validating: bytes, as: UTF8.self)
        case .status(let text): text
        default: nil
        }
    }

    /// An integer reply, or a bulk or status string that parses as a decimal integer (as `Int64(_:)`
    /// reads text: an optional sign, digits, nil on overflow).
    public var int: Int64? {
        switch self {
        case .integer(let value): value
        case .bulk(let bytes): Self.decimal(bytes)
        case .status(let text): Int64(text)
        default: nil
        }
    }

    /// `Int64(_:)` on the bytes' text without making a string: the scheduler reads hundreds of crowd
    /// counters' day → count pairs per batch.
    static func decimal(_ bytes: [UInt8]) -> Int64? {
        var digits = bytes[...]
        let negative = digits.first == UInt8(ascii: "-")
        if negative || digits.first == UInt8(ascii: "+") { digits = digits.dropFirst() }
        guard !digits.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let digit = Int64(byte - UInt8(ascii: "0"))
            // Accumulated negative, so Int64.min (one more than Int64.max in magnitude) parses too.
            let (shifted, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowB) = shifted.subtractingReportingOverflow(digit)
            guard !overflowA, !overflowB else { return nil }
            value = next
        }
        if negative { return value }
        return value == .min ? nil : -value
    }

    /// The raw bytes of a bulk string; nil for every other reply.
    public var bytes: [UInt8]? {
        if case .bulk(let bytes) = self { bytes } else { nil }
    }

    /// The elements of an array reply; empty for every other reply.
    public var elements: [RedisReply] {
        if case .array(let elements) = self { elements } else { [] }
    }

    /// A flat `[name, value, name, value, …]` array (HGETALL, XINFO, a stream entry's fields) as a
    /// dictionary; elements whose name is not text are skipped.
    public var fieldMap: [String: RedisReply] {
        let flat = elements
        var fields: [String: RedisReply] = [:]
        for index in stride(from: 0, to: flat.count - 1, by: 2) {
            if let name = flat[index].string { fields[name] = flat[index + 1] }
        }
        return fields
    }

    /// True for a nil bulk string or nil array.
    public var isNull: Bool {
        if case .null = self { true } else { false }
    }

    /// The text of an error reply; nil for every other reply.
    public var errorMessage: String? {
        if case .error(let message) = self { message } else { nil }
    }
}
