/// How far a consumer group has finished a stream: every entry it has read and acknowledged, from
/// `XINFO GROUPS` (last delivered id, lag) and the `XPENDING` summary (oldest entry still pending).
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

    /// The two commands whose replies `init(groups:pending:group:)` reads, in that order.
    public static func commands(stream: String, group: String) -> [RedisCommand] {
        [RedisCommand("XINFO", "GROUPS", stream), RedisCommand("XPENDING", stream, group)]
    }

    /// Nil when the stream or the group does not exist or a reply is not what Redis 7 sends. A lag
    /// Redis cannot tell (null) counts as not caught up.
    public init?(groups: RedisReply, pending: RedisReply, group: String) {
        guard let fields = groups.elements.map(\.fieldMap).first(where: { $0["name"]?.string == group }) else { return nil }
        self.init(group: fields, pending: pending)
    }

    /// One group's fields of `XINFO GROUPS` and its `XPENDING` summary.
    public init?(group fields: [String: RedisReply], pending: RedisReply) {
        guard let last = fields["last-delivered-id"]?.string.flatMap(StreamTrim.EntryID.init) else { return nil }
        let summary = pending.elements
        guard let count = summary.first?.int else { return nil }
        lastDelivered = last
        oldestPending = count > 0 && summary.count > 1 ? summary[1].string.flatMap(StreamTrim.EntryID.init) : nil
        caughtUp = count == 0 && fields["lag"]?.int == 0
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
