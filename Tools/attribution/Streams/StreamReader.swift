import RedisStreams

/// Reads the partitions of one stream as one: ranges merged in entry order a page at a time, the newest
/// entries over all partitions, and what was added after given positions.
struct StreamReader {
    /// One entry and the key it was read from.
    struct Read {
        let key: String
        let entry: StreamPages.Entry
    }

    let connection: RedisConnection
    let keys: [String]
    var page = 500

    /// Calls `body` with every entry between `from` and `to` (inclusive) on every key, in entry-id order;
    /// holds at most one page per key.
    func range(from: String, to: String, _ body: (Read) throws -> Void) async throws {
        var cursors = keys.map { Cursor(key: $0, start: from) }
        while true {
            let short = cursors.indices.filter { cursors[$0].buffer.isEmpty && !cursors[$0].exhausted }
            if !short.isEmpty {
                let replies = try await connection.pipeline(
                    short.map { RedisCommand("XRANGE", cursors[$0].key, cursors[$0].start, to, "COUNT", String(page)) })
                for (index, reply) in zip(short, replies) { try cursors[index].fill(with: reply, page: page) }
            }
            guard let next = Self.earliest(cursors) else { return }
            try body(Read(key: cursors[next].key, entry: cursors[next].buffer.removeFirst()))
        }
    }

    /// The newest `count` entries between `from` and `to` over all keys, oldest first.
    func newest(_ count: Int, from: String, to: String) async throws -> [Read] {
        guard count > 0 else { return [] }
        let replies = try await connection.pipeline(keys.map { RedisCommand("XREVRANGE", $0, to, from, "COUNT", String(count)) })
        var reads: [Read] = []
        for (key, reply) in zip(keys, replies) {
            if let error = reply.errorMessage { throw RedisError(.unexpectedReply, "XREVRANGE \(key): \(error)") }
            reads += reply.elements.compactMap(StreamPages.Entry.init).map { Read(key: key, entry: $0) }
        }
        return Array(reads.sorted { Self.order($0.entry.id, $1.entry.id) }.suffix(count))
    }

    /// Each key's newest entry id now ("0-0" for an empty or missing stream): where following starts.
    func tips() async throws -> [String: String] {
        let replies = try await connection.pipeline(keys.map { RedisCommand("XREVRANGE", $0, "+", "-", "COUNT", "1") })
        var tips: [String: String] = [:]
        for (key, reply) in zip(keys, replies) {
            tips[key] = reply.elements.first.flatMap(StreamPages.Entry.init)?.id ?? "0-0"
        }
        return tips
    }

    /// What was added after each key's position (at most a page per key), in entry-id order.
    func after(_ positions: [String: String]) async throws -> [Read] {
        let replies = try await connection.pipeline(
            keys.map { RedisCommand("XRANGE", $0, "(" + (positions[$0] ?? "0-0"), "+", "COUNT", String(page)) })
        var reads: [Read] = []
        for (key, reply) in zip(keys, replies) {
            if let error = reply.errorMessage { throw RedisError(.unexpectedReply, "XRANGE \(key): \(error)") }
            reads += reply.elements.compactMap(StreamPages.Entry.init).map { Read(key: key, entry: $0) }
        }
        return reads.sorted { Self.order($0.entry.id, $1.entry.id) }
    }

    /// Whether entry id `a` comes before `b` (milliseconds, then sequence; ids of different partitions
    /// may tie on both, then the order is the keys').
    static func order(_ a: String, _ b: String) -> Bool {
        let (x, y) = (parts(a), parts(b))
        return x.milliseconds != y.milliseconds ? x.milliseconds < y.milliseconds : x.sequence < y.sequence
    }

    /// The later of two entry ids, either of which may be missing.
    static func later(_ a: String?, _ b: String) -> String {
        guard let a else { return b }
        return order(a, b) ? b : a
    }

    private static func parts(_ id: String) -> (milliseconds: UInt64, sequence: UInt64) {
        let halves = id.split(separator: "-", maxSplits: 1)
        return (UInt64(halves.first ?? "") ?? 0, halves.count > 1 ? UInt64(halves[1]) ?? 0 : 0)
    }

    /// The cursor whose next entry comes first, if any has one.
    private static func earliest(_ cursors: [Cursor]) -> Int? {
        cursors.indices.filter { !cursors[$0].buffer.isEmpty }.min {
            order(cursors[$0].buffer[0].id, cursors[$1].buffer[0].id)
        }
    }

    /// One key's place in a range: its next page and where the one after starts.
    private struct Cursor {
        let key: String
        var start: String
        var buffer: [StreamPages.Entry] = []
        var exhausted = false

        init(key: String, start: String) {
            self.key = key
            self.start = start
        }

        mutating func fill(with reply: RedisReply, page: Int) throws {
            if let error = reply.errorMessage { throw RedisError(.unexpectedReply, "XRANGE \(key): \(error)") }
            buffer = reply.elements.compactMap(StreamPages.Entry.init)
            exhausted = buffer.count < page
            if let last = buffer.last { start = "(" + last.id }
        }
    }
}
