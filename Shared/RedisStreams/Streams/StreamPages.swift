/// The one way to read a whole stream: XRANGE pages, oldest first, each page after the last id seen, so
/// a reader may delete the entries it was handed (erasure, dead-letter replay) without losing its place.
public enum StreamPages {
    /// One raw XRANGE entry: its id and its field/value list.
    public struct Entry: Sendable {
        public let id: String
        public let fields: RedisReply

        /// Field → value.
        public var fieldMap: [String: RedisReply] { fields.fieldMap }

        /// From one element of an XRANGE or XREVRANGE reply (`[id, [field, value, …]]`).
        public init?(_ raw: RedisReply) {
            let parts = raw.elements
            guard parts.count == 2, let id = parts[0].string else { return nil }
            self.id = id
            self.fields = parts[1]
        }
    }

    /// Calls `body` with each page of at most `size` entries until the stream is read through.
    public static func forEach(
        _ stream: String, size: Int = 1_000, on connection: RedisConnection, _ body: ([Entry]) async throws -> Void
    ) async throws {
        var start = "-"
        while true {
            let reply = try await connection.send(RedisCommand("XRANGE", stream, start, "+", "COUNT", String(max(1, size))))
            let page = reply.elements.compactMap(Entry.init)
            if !page.isEmpty { try await body(page) }
            guard reply.elements.count >= size, let last = page.last?.id else { return }
            start = "(" + last
        }
    }
}
