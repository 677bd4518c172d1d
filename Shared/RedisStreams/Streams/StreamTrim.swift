/// Trimming what every group has acknowledged: a stream would otherwise keep every event (and the
/// device identifiers in them) forever. An entry may go once it is older than the retention and no
/// group still needs it: every group has read past it and none holds it pending.
public enum StreamTrim {
    /// A stream id as (milliseconds, sequence), for comparisons.
    public struct EntryID: Comparable, Sendable, CustomStringConvertible {
        public var milliseconds: UInt64
        public var sequence: UInt64

        public init(milliseconds: UInt64, sequence: UInt64) {
            self.milliseconds = milliseconds
            self.sequence = sequence
        }

        /// Exactly `<ms>-<seq>`, both fitting UInt64 (an admin route passes ids from outside).
        public init?(_ text: String) {
            let parts = text.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { (48...57).contains($0) } }),
                let ms = UInt64(parts[0]), let seq = UInt64(parts[1])
            else { return nil }
            self.init(milliseconds: ms, sequence: seq)
        }

        public static func < (a: EntryID, b: EntryID) -> Bool { (a.milliseconds, a.sequence) < (b.milliseconds, b.sequence) }

        /// The id just before this one (`0-0` stays): reading a stream "after" it starts with this one.
        public var predecessor: EntryID {
            if sequence > 0 { return EntryID(milliseconds: milliseconds, sequence: sequence - 1) }
            if milliseconds > 0 { return EntryID(milliseconds: milliseconds - 1, sequence: .max) }
            return self
        }
        public var description: String { "\(milliseconds)-\(sequence)" }
    }

    /// The MINID below which every entry may be deleted, or nil when nothing may: the smallest of what
    /// each group has finished (`GroupProgress.finishedBefore`: its last delivered id + 1, or its oldest
    /// pending id) and of the retention bound. A stream without groups is trimmed by retention alone.
    public static func threshold(groups: [GroupProgress], now: UInt64, retentionMilliseconds: UInt64) -> EntryID? {
        guard now > retentionMilliseconds else { return nil }
        let bound = groups.map(\.finishedBefore).reduce(EntryID(milliseconds: now - retentionMilliseconds, sequence: 0), min)
        return bound.milliseconds == 0 && bound.sequence == 0 ? nil : bound
    }

    /// Reads the groups of `stream` and trims it (approximately, `~`, so Redis frees whole nodes).
    /// Returns how many entries went.
    @discardableResult
    public static func trim(
        _ stream: String, retentionMilliseconds: UInt64, now: UInt64, approximate: Bool = true, on connection: RedisConnection
    ) async throws -> Int {
        let info = try await connection.pipeline([RedisCommand("XINFO", "GROUPS", stream)])[0]
        // A stream not written yet (a partition's `rejected` with nothing refused): nothing to trim.
        if info.errorMessage?.contains("no such key") == true { return 0 }
        if let message = info.errorMessage { throw RedisError(.server, message) }
        var groups: [GroupProgress] = []
        for group in info.elements.map(\.fieldMap) {
            guard let name = group["name"]?.string,
                // Trimming needs only where the group finished (`finishedBefore`), not whether it caught up.
                let progress = GroupProgress(
                    group: group, pending: try await connection.send(RedisCommand("XPENDING", stream, name)), lastEntry: nil)
            else {
                return 0  // a group we cannot read: trim nothing rather than something needed
            }
            groups.append(progress)
        }
        guard let bound = threshold(groups: groups, now: now, retentionMilliseconds: retentionMilliseconds) else { return 0 }
        return Int(
            try await connection.send(RedisCommand("XTRIM", stream, "MINID", approximate ? "~" : "=", bound.description)).int ?? 0
        )
    }
}
