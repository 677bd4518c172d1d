/// How far a consumer group has finished a stream: every entry it has read and acknowledged, from
/// `XINFO GROUPS` (last delivered id, lag), the `XPENDING` summary (oldest entry still pending) and the
/// stream's last entry.
public struct GroupProgress: Sendable, Equatable {
    /// The last entry delivered to the group (acknowledged or pending).
    public var lastDelivered: StreamTrim.EntryID
    /// The oldest entry delivered and not acknowledged, if any.
    public var oldestPending: StreamTrim.EntryID?
    /// Nothing undelivered and nothing pending: every entry written so far is finished.
    public var caughtUp: Bool

    public init(lastDelivered: StreamTrim.EntryID, oldestPending: StreamTrim.EntryID?, caughtUp: Bool) {
        self.lastDelivered = lastDelivered
        self.oldestPending = oldestPending
        self.caughtUp = caughtUp
    }

    /// Every entry with an id below this one is delivered and acknowledged.
    public var finishedBefore: StreamTrim.EntryID {
        min(
            StreamTrim.EntryID(milliseconds: lastDelivered.milliseconds, sequence: lastDelivered.sequence &+ 1),
            oldestPending ?? .max)
    }

    /// The three commands whose replies `init(groups:pending:last:group:)` reads, in that order.
    public static func commands(stream: String, group: String) -> [RedisCommand] {
        [RedisCommand("XINFO", "GROUPS", stream), RedisCommand("XPENDING", stream, group), lastEntryCommand(stream)]
    }

    /// The stream's last entry (`lastEntry(_:)` reads its id from the reply).
    public static func lastEntryCommand(_ stream: String) -> RedisCommand {
        RedisCommand("XREVRANGE", stream, "+", "-", "COUNT", "1")
    }

    /// The id in a reply to `lastEntryCommand`; nil for an empty stream.
    public static func lastEntry(_ reply: RedisReply) -> StreamTrim.EntryID? {
        reply.elements.first?.elements.first?.string.flatMap(StreamTrim.EntryID.init)
    }

    /// Entries not yet delivered to a group. Redis's `lag` counts entries added against entries read,
    /// counters that a stream moved by resharding (MIGRATE) or promoted by a failover can carry out of
    /// step for good (Redis 7.0: a promoted replica's group kept a lag of 5 with every entry read and
    /// acknowledged), so a group that was handed the stream's last entry has nothing unread, and one
    /// that was not has at least that entry unread, whatever they say. Nil when Redis cannot tell and
    /// the last entry does not settle it. `lastEntry` nil: the stream is empty.
    public static func unread(lag: Int64?, lastDelivered: StreamTrim.EntryID?, lastEntry: StreamTrim.EntryID?) -> Int64? {
        guard let lastEntry else { return 0 }
        if let lastDelivered, lastDelivered >= lastEntry { return 0 }
        return lag.map { max($0, 1) }
    }

    /// Nil when the stream or the group does not exist or a reply is not what Redis 7 sends. A lag
    /// nobody can tell counts as not caught up.
    public init?(groups: RedisReply, pending: RedisReply, last: RedisReply, group: String) {
        guard let fields = groups.elements.map(\.fieldMap).first(where: { $0["name"]?.string == group }) else { return nil }
        self.init(group: fields, pending: pending, lastEntry: Self.lastEntry(last))
    }

    /// One group's fields of `XINFO GROUPS`, its `XPENDING` summary and the stream's last entry.
    public init?(group fields: [String: RedisReply], pending: RedisReply, lastEntry: StreamTrim.EntryID?) {
        guard let last = fields["last-delivered-id"]?.string.flatMap(StreamTrim.EntryID.init) else { return nil }
        let summary = pending.elements
        guard let count = summary.first?.int else { return nil }
        lastDelivered = last
        oldestPending = count > 0 && summary.count > 1 ? summary[1].string.flatMap(StreamTrim.EntryID.init) : nil
        caughtUp = count == 0 && Self.unread(lag: fields["lag"]?.int, lastDelivered: last, lastEntry: lastEntry) == 0
    }

    /// The latest time (ms of entry ids) through which every entry is finished; `now` when caught up
    /// (an entry written later gets a later id).
    public func finishedThrough(now: UInt64) -> UInt64 {
        caughtUp ? now : max(finishedBefore.milliseconds, 1) - 1
    }
}

extension StreamTrim.EntryID {
    static let max = StreamTrim.EntryID(milliseconds: .max, sequence: .max)
}
