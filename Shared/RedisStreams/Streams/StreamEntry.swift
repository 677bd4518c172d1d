/// One stream entry as this pipeline writes it: an id and the message bytes stored in field `e`.
public struct StreamEntry: Sendable, Equatable {
    /// The entry id assigned by `XADD *`, e.g. `1700000000000-0`.
    public let id: String
    /// The value of field `e`: the JSON envelope. Empty if the entry has no `e` field.
    public let message: [UInt8]
    /// The partition whose stream the entry was read from (index into the worker's partitions; 0 when
    /// there is one stream): the stage builds every key it touches for the entry in that partition.
    public var partition: Int

    /// An entry from its parts.
    public init(id: String, message: [UInt8], partition: Int = 0) {
        self.id = id
        self.message = message
        self.partition = partition
    }
}

extension StreamEntry {
    /// The field every message is stored under.
    static let messageField: [UInt8] = Array("e".utf8)

    /// Parses an XRANGE-shaped list of `[id, [field, value, ...]]`.
    ///
    /// Entries whose field list is nil were deleted from the stream while pending (XAUTOCLAIM on
    /// Redis 6.2, XREADGROUP on pending ids); they are returned apart so callers can ack them.
    static func parse(_ reply: RedisReply) throws -> (entries: [StreamEntry], deletedIDs: [String]) {
        var entries: [StreamEntry] = []
        var deletedIDs: [String] = []
        for item in reply.elements {
            let parts = item.elements
            guard parts.count == 2, let id = parts[0].string else {
                throw RedisError(.unexpectedReply, "malformed stream entry: \(item)")
            }
            if parts[1].isNull {
                deletedIDs.append(id)
                continue
            }
            let fields = parts[1].elements
            var message: [UInt8] = []
            var index = 0
            while index + 1 < fields.count {
                if fields[index].bytes == Self.messageField {
                    message = fields[index + 1].bytes ?? []
                    break
                }
                index += 2
            }
            entries.append(StreamEntry(id: id, message: message))
        }
        return (entries, deletedIDs)
    }
}
