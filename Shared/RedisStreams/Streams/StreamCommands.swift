/// Builders for the stream commands stages put inside their own transactions.
public enum StreamCommands {
    /// `XADD stream * e <message>`: appends one message.
    public static func add(_ stream: String, message: [UInt8]) -> RedisCommand {
        RedisCommand(bytes: [Array("XADD".utf8), Array(stream.utf8), Array("*".utf8), StreamEntry.messageField, message])
    }

    /// `XACK stream group id...`: removes entries from the group's pending list.
    public static func ack(_ stream: String, group: String, ids: [String]) -> RedisCommand {
        RedisCommand(["XACK", stream, group] + ids)
    }
}
