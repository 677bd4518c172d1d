import AttributionModel
import RedisStreams

/// Crowd sizes: conversions over a trailing 30 days per crowd key, each a hash of day → count
/// (`CrowdDayBuckets`): a few hundred bytes per crowd however many conversions it holds.
struct CrowdCounters {
    let policy: TimePolicy

    static func keys(for attribution: Attribution) -> (
        publisher: String, advertised: String, country: String, digits: [Int: String]
    ) {
        let winner = attribution.winner
        let source = "scheduler:crowd:source:\(attribution.advertisedItemIdentifier):\(winner.adNetworkIdentifier)"
        var digits: [Int: String] = [:]
        for count in 2...4 {
            digits[count] = "\(source):\(SourceIdentifierTruncation.truncate(winner.sourceIdentifier, digits: count))"
        }
        return (
            "scheduler:crowd:publisher:\(winner.publisherItemIdentifier)",
            "scheduler:crowd:advertised:\(attribution.advertisedItemIdentifier)",
            "scheduler:crowd:country:\(attribution.countryCode ?? "-")", digits
        )
    }

    static func allKeys(for attribution: Attribution) -> [String] {
        let k = keys(for: attribution)
        return [k.publisher, k.advertised, k.country, k.digits[2]!, k.digits[3]!, k.digits[4]!]
    }

    /// One HGETALL per crowd key: day → conversions that day.
    func countCommands(for attribution: Attribution) -> [RedisCommand] {
        Self.allKeys(for: attribution).map { RedisCommand("HGETALL", $0) }
    }

    /// The trailing-period count in one HGETALL reply, as of the conversion's time.
    func count(_ reply: RedisReply, at time: Milliseconds) -> Int {
        var buckets: [Int64: Int] = [:]
        for (day, count) in reply.fieldMap {
            if let day = Int64(day), let count = count.string.flatMap({ Int($0) }) { buckets[day] = count }
        }
        return CrowdDayBuckets.count(buckets, at: time, policy: policy)
    }

    /// Counts the conversion on its day in each of its crowds and drops days that fell out of the
    /// trailing period (a week of them, so a crowd idle for a few days is still trimmed).
    func recordCommands(for attribution: Attribution) -> [RedisCommand] {
        let day = CrowdDayBuckets.day(of: attribution.conversionTime, policy: policy)
        let stale = (CrowdDayBuckets.days...(CrowdDayBuckets.days + 6)).map { String(day - $0) }
        let keep = policy.milliseconds(CrowdTierThresholds.trailingPeriod) * 2
        return Self.allKeys(for: attribution).flatMap { key in
            [
                RedisCommand("HINCRBY", key, String(day), "1"),
                RedisCommand(["HDEL", key] + stale),
                RedisCommand("PEXPIRE", key, String(keep)),
            ]
        }
    }

    /// Sizes including this conversion itself.
    static func sizes(from counts: [Int]) -> CrowdSizes {
        let c = counts.map { $0 + 1 }
        return CrowdSizes(
            publisherApp: c[0], advertisedApp: c[1], country: c[2], sourceIdentifierDigits: [2: c[3], 3: c[4], 4: c[5]])
    }
}
