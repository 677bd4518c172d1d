import AttributionModel
import RedisStreams

/// Crowd sizes: distinct conversions over a trailing 30 days per crowd key, each a sorted set of
/// conversion ids scored by conversion time.
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

    var period: Milliseconds { policy.milliseconds(CrowdTierThresholds.trailingPeriod) }

    func countCommands(for attribution: Attribution) -> [RedisCommand] {
        Self.allKeys(for: attribution).map {
            RedisCommand("ZCOUNT", $0, String(attribution.conversionTime - period), "+inf")
        }
    }

    /// Adds the conversion to each of its crowds and trims what fell out of the trailing period.
    func recordCommands(for attribution: Attribution) -> [RedisCommand] {
        Self.allKeys(for: attribution).flatMap { key in
            [
                RedisCommand("ZADD", key, String(attribution.conversionTime), attribution.conversionIdentifier),
                RedisCommand("ZREMRANGEBYSCORE", key, "-inf", "(\(attribution.conversionTime - period)"),
                RedisCommand("PEXPIRE", key, String(period * 2)),
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
