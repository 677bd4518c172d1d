import AttributionModel
import Testing

/// When a crowd counter's increment also trims stale days and extends the expiry.
@Suite struct CrowdUpkeepTests {
    static let keepFor: Milliseconds = 1_000_000
    static let days = CrowdDayBuckets.days
    static func increment(day: Int64) -> CrowdIncrement {
        CrowdIncrement(crowds: [.country("US")], day: day, staleDays: [day - days - 1, day - days], keepFor: keepFor)
    }

    /// Without the counter's days: the stale week once per new day.
    @Test(
        arguments: [
            // (last trimmed day, last expiry end, increment's day, now, trims?, extend?)
            (nil, nil, 100, 0, true, true),  // never touched by this scheduler: both
            (100, 1_000_000, 100, 0, false, false),  // same day, full lifetime left: only the HINCRBY
            (100, 1_000_000, 101, 0, true, true),  // a new day: trim once (with an expiry, so they merge)
            (101, 1_000_000, 100, 0, false, false),  // a late conversion's older day: already covered
            (100, 1_000_000, 100, 249_999, false, false),  // just over ¾ of the lifetime left
            (100, 1_000_000, 100, 250_001, false, true),  // under ¾ left: extend
            (100, nil, 100, 0, false, true),
            (nil, 1_000_000, 100, 0, true, true),
        ] as [(Int64?, Milliseconds?, Int64, Milliseconds, Bool, Bool)])
    func needsWithoutDays(trimmed: Int64?, expiresAt: Milliseconds?, day: Int64, now: Milliseconds, trim: Bool, expire: Bool) {
        let increment = Self.increment(day: day)
        let needs = CrowdUpkeep(trimmedDay: trimmed, expiresAt: expiresAt).needs(increment, now: now, known: nil)
        #expect(needs.trim == (trim ? increment.staleDays : []) && needs.expire == expire)
    }

    /// With the counter's days: exactly those out of the trailing period, whatever was done before.
    @Test(
        arguments: [
            ([:], nil, [], true),  // a new counter: no HDEL, its first expiry
            ([:], 1_000_000, [], false),
            ([100: 3, 99: 1], 1_000_000, [], false),  // nothing stale
            ([100: 3, 100 - days: 1, 100 - days + 1: 2, 100 - days - 9: 4], 1_000_000, [100 - days - 9, 100 - days], true),
        ] as [([Int64: Int], Milliseconds?, [Int64], Bool)])
    func needsWithDays(known: [Int64: Int], expiresAt: Milliseconds?, trim: [Int64], expire: Bool) {
        let needs = CrowdUpkeep(trimmedDay: 100, expiresAt: expiresAt).needs(Self.increment(day: 100), now: 0, known: known)
        #expect(needs.trim == trim && needs.expire == expire)
    }

    /// What was written is remembered; what was skipped keeps its earlier value.
    @Test func afterRemembersWhatWasWritten() {
        let start = CrowdUpkeep(trimmedDay: 100, expiresAt: 500)
        #expect(
            start.after(Self.increment(day: 101), now: 10, trimmed: true, expired: true)
                == CrowdUpkeep(trimmedDay: 101, expiresAt: 1_000_010))
        #expect(start.after(Self.increment(day: 101), now: 10, trimmed: false, expired: false) == start)
        #expect(
            CrowdUpkeep().after(Self.increment(day: 7), now: 0, trimmed: true, expired: false) == CrowdUpkeep(trimmedDay: 7))
    }

    /// Over a run of increments a counter is never left with less than ¾ of its lifetime after the last
    /// one, and a busy day costs one trim.
    @Test func aBusyCounterStaysAliveAndIsTrimmedOncePerDay() {
        var upkeep = CrowdUpkeep()
        var trims = 0
        for now in stride(from: Milliseconds(0), to: 3_000_000, by: 1_000) {
            let increment = Self.increment(day: 100 + Int64(now / 1_000_000))
            let (trim, expire) = upkeep.needs(increment, now: now, known: nil)
            trims += trim.isEmpty ? 0 : 1
            upkeep = upkeep.after(increment, now: now, trimmed: !trim.isEmpty, expired: expire)
            #expect(upkeep.expiresAt! - now >= Self.keepFor / 4 * 3)
        }
        #expect(trims == 3)
    }
}
