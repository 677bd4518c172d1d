import AttributionModel
import Testing

/// When a crowd counter's increment also trims stale days and extends the expiry.
@Suite struct CrowdUpkeepTests {
    static let keepFor: Milliseconds = 1_000_000
    static func increment(day: Int64) -> CrowdIncrement {
        CrowdIncrement(crowds: [.country("US")], day: day, staleDays: [day - 30], keepFor: keepFor)
    }

    @Test(
        arguments: [
            // (last trimmed day, last expiry end, increment's day, now, trim?, extend?)
            (nil, nil, 100, 0, true, true),  // never touched by this scheduler: both
            (100, 1_000_000, 100, 0, false, false),  // same day, full lifetime left: only the HINCRBY
            (100, 1_000_000, 101, 0, true, true),  // a new day: trim once (with an expiry, so they merge)
            (101, 1_000_000, 100, 0, false, false),  // a late conversion's older day: already covered
            (100, 1_000_000, 100, 249_999, false, false),  // just over ¾ of the lifetime left
            (100, 1_000_000, 100, 250_001, false, true),  // under ¾ left: extend
            (100, nil, 100, 0, false, true),
            (nil, 1_000_000, 100, 0, true, true),
        ] as [(Int64?, Milliseconds?, Int64, Milliseconds, Bool, Bool)])
    func needs(trimmed: Int64?, expiresAt: Milliseconds?, day: Int64, now: Milliseconds, trim: Bool, expire: Bool) {
        let needs = CrowdUpkeep(trimmedDay: trimmed, expiresAt: expiresAt).needs(Self.increment(day: day), now: now)
        #expect(needs.trim == trim && needs.expire == expire)
    }

    /// What was written is remembered; what was skipped keeps its earlier value.
    @Test func afterRemembersWhatWasWritten() {
        let start = CrowdUpkeep(trimmedDay: 100, expiresAt: 500)
        #expect(
            start.after(Self.increment(day: 101), now: 10, trimmed: true, expired: true)
                == CrowdUpkeep(trimmedDay: 101, expiresAt: 1_000_010))
        #expect(start.after(Self.increment(day: 101), now: 10, trimmed: false, expired: false) == start)
        #expect(CrowdUpkeep().after(Self.increment(day: 7), now: 0, trimmed: true, expired: false) == CrowdUpkeep(trimmedDay: 7))
    }

    /// Over a run of increments a counter is never left with less than ¾ of its lifetime after the last
    /// one, and a busy day costs one trim.
    @Test func aBusyCounterStaysAliveAndIsTrimmedOncePerDay() {
        var upkeep = CrowdUpkeep()
        var trims = 0
        for now in stride(from: Milliseconds(0), to: 3_000_000, by: 1_000) {
            let increment = Self.increment(day: 100 + Int64(now / 1_000_000))
            let (trim, expire) = upkeep.needs(increment, now: now)
            trims += trim ? 1 : 0
            upkeep = upkeep.after(increment, now: now, trimmed: trim, expired: expire)
            #expect(upkeep.expiresAt! - now >= Self.keepFor / 4 * 3)
        }
        #expect(trims == 3)
    }
}
