import Foundation
import RedisStreams
import TestSupport
import Testing

@Suite("Trimming acknowledged stream entries")
struct StreamTrimTests {
    typealias ID = StreamTrim.EntryID

    @Test(
        "the MINID: retention, each group's last delivered id and oldest pending id",
        arguments: [
            // (last delivered, oldest pending, now, retention) → threshold
            // All acknowledged: up to what was read.
            (ID(milliseconds: 500, sequence: 3), nil, 1_000, 100, ID(milliseconds: 500, sequence: 4)),
            (
                ID(milliseconds: 500, sequence: 3), ID(milliseconds: 200, sequence: 0), 1_000, 100,
                ID(milliseconds: 200, sequence: 0)
            ),
            // Entries younger than the retention stay.
            (ID(milliseconds: 950, sequence: 0), nil, 1_000, 100, ID(milliseconds: 900, sequence: 0)),
        ] as [(ID, ID?, UInt64, UInt64, ID)])
    func threshold(_ delivered: ID, _ pending: ID?, _ now: UInt64, _ retention: UInt64, _ expected: ID) {
        #expect(
            StreamTrim.threshold(
                groups: [GroupProgress(lastDelivered: delivered, oldestPending: pending, caughtUp: false)], now: now,
                retentionMilliseconds: retention) == expected)
    }

    @Test func twoGroupsTheSlowerOneDecides() {
        let groups = [
            GroupProgress(lastDelivered: ID(milliseconds: 900, sequence: 0), oldestPending: nil, caughtUp: false),
            GroupProgress(lastDelivered: ID(milliseconds: 300, sequence: 1), oldestPending: nil, caughtUp: false),
        ]
        #expect(StreamTrim.threshold(groups: groups, now: 10_000, retentionMilliseconds: 1) == ID(milliseconds: 300, sequence: 2))
        #expect(StreamTrim.threshold(groups: [], now: 50, retentionMilliseconds: 100) == nil)
    }

    /// Ten entries; the group read six and acknowledged all but the fifth: entries 1–4 go, the pending
    /// fifth and everything after it stay (unread ones too).
    @Test func trimsOnlyWhatEveryGroupAcknowledged() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let redis = server.connect()
        var ids: [String] = []
        for index in 1...10 {
            ids.append(try #require(try await redis.send(RedisCommand("XADD", "s", "*", "e", "m\(index)")).string))
        }
        _ = try await redis.send(RedisCommand("XGROUP", "CREATE", "s", "g", "0"))
        _ = try await redis.send(RedisCommand("XREADGROUP", "GROUP", "g", "c", "COUNT", "6", "STREAMS", "s", ">"))
        _ = try await redis.send(RedisCommand(["XACK", "s", "g"] + ids[0..<4] + [ids[5]]))
        let now = UInt64(Date().timeIntervalSince1970 * 1000) + 60_000
        let trimmed = try await StreamTrim.trim("s", retentionMilliseconds: 1, now: now, approximate: false, on: redis)
        #expect(trimmed == 4)
        let left = try await streamRecords("s", on: redis).map(\.id)
        #expect(left == Array(ids[4...]))
    }

    /// A stream no group reads (`rejected`) is trimmed by the retention alone.
    @Test func withoutGroupsTheRetentionDecides() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let redis = server.connect()
        for index in 1...3 { _ = try await redis.send(RedisCommand("XADD", "s", "\(index)000-0", "e", "old")) }
        let recent = UInt64(Date().timeIntervalSince1970 * 1000)
        _ = try await redis.send(RedisCommand("XADD", "s", "\(recent)-0", "e", "recent"))
        let trimmed = try await StreamTrim.trim("s", retentionMilliseconds: 60_000, now: recent, approximate: false, on: redis)
        #expect(trimmed == 3)
        #expect(try await streamRecords("s", on: redis).map(\.id) == ["\(recent)-0"])
    }

    /// A partition's stream nobody wrote yet (the verifier trims every partition's `rejected`).
    @Test func aStreamNotWrittenYetHasNothingToTrim() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let trimmed = try await StreamTrim.trim("never-written", retentionMilliseconds: 1, now: 10_000, on: server.connect())
        #expect(trimmed == 0)
    }

    /// `GroupProgress` on a real stream: what the group finished, read from XINFO GROUPS and XPENDING.
    @Test func groupProgressIsWhatTheGroupFinished() async throws {
        let server = try await RedisServer.start()
        defer { server.stop() }
        let redis = server.connect()
        for index in 1...3 { _ = try await redis.send(RedisCommand("XADD", "s", "\(index)000-0", "e", "m")) }
        _ = try await redis.send(RedisCommand("XGROUP", "CREATE", "s", "g", "0"))
        func progress() async throws -> GroupProgress? {
            let replies = try await redis.pipeline(GroupProgress.commands(stream: "s", group: "g"))
            return GroupProgress(groups: replies[0], pending: replies[1], last: replies[2], group: "g")
        }
        // Nothing read: nothing finished, three undelivered.
        #expect(try await progress()?.finishedBefore == ID(milliseconds: 0, sequence: 1))
        #expect(try await progress()?.caughtUp == false)
        _ = try await redis.send(RedisCommand("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">"))
        _ = try await redis.send(RedisCommand("XACK", "s", "g", "2000-0"))
        // The first is pending: it bounds what is finished, though the second is acknowledged.
        let pending = try #require(try await progress())
        #expect(pending.finishedBefore == ID(milliseconds: 1000, sequence: 0) && !pending.caughtUp)
        #expect(pending.finishedThrough(now: 99_000) == 999)
        _ = try await redis.send(RedisCommand("XACK", "s", "g", "1000-0"))
        #expect(try await progress()?.finishedBefore == ID(milliseconds: 2000, sequence: 1), "the third is undelivered")
        _ = try await redis.send(RedisCommand("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"))
        _ = try await redis.send(RedisCommand("XACK", "s", "g", "3000-0"))
        let done = try #require(try await progress())
        #expect(done.caughtUp && done.finishedThrough(now: 99_000) == 99_000, "everything written so far is finished")
        let other = try await redis.pipeline(GroupProgress.commands(stream: "s", group: "other"))
        #expect(GroupProgress(groups: other[0], pending: other[1], last: other[2], group: "other") == nil, "no such group")

        // Redis's counters out of step (as a failover or a resharding leaves them): the last entry decides.
        _ = try await redis.send(RedisCommand("XGROUP", "SETID", "s", "g", "3000-0", "ENTRIESREAD", "1"))
        #expect(try await redis.send(RedisCommand("XINFO", "GROUPS", "s")).elements.first?.fieldMap["lag"]?.int == 2)
        #expect(try await progress()?.caughtUp == true, "handed the last entry: nothing unread, whatever lag says")
        _ = try await redis.send(RedisCommand("XGROUP", "SETID", "s", "g", "2000-0", "ENTRIESREAD", "3"))
        #expect(try await redis.send(RedisCommand("XINFO", "GROUPS", "s")).elements.first?.fieldMap["lag"]?.int == 0)
        #expect(try await progress()?.caughtUp == false, "the last entry is unread, whatever lag says")
        #expect(
            GroupProgress.unread(
                lag: 0, lastDelivered: ID(milliseconds: 2000, sequence: 0), lastEntry: ID(milliseconds: 3000, sequence: 0)) == 1)
        #expect(GroupProgress.unread(lag: nil, lastDelivered: nil, lastEntry: nil) == 0, "an empty stream")
    }
}
