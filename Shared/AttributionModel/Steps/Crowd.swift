/// One crowd a conversion counts toward: its publisher app, its advertised app, its country, and its
/// source id kept at 2, 3 and 4 digits (per advertised app and ad network). Crowd sizes decide tiers.
public enum Crowd: Sendable, Hashable {
    case publisherApp(ItemIdentifier)
    case advertisedApp(ItemIdentifier)
    /// "-" when the conversion carries no country code.
    case country(String)
    case source(advertisedApp: ItemIdentifier, network: AdNetworkIdentifier, truncated: String)

    /// The six crowds of a conversion, in the order `sizes` reads them.
    public static func all(for attribution: Attribution) -> [Crowd] {
        let winner = attribution.winner
        return [
            .publisherApp(winner.publisherItemIdentifier), .advertisedApp(attribution.advertisedItemIdentifier),
            .country(attribution.countryCode ?? "-"),
        ]
            + (2...4).map { digits in
                .source(
                    advertisedApp: attribution.advertisedItemIdentifier, network: winner.adNetworkIdentifier,
                    truncated: SourceIdentifierTruncation.truncate(winner.sourceIdentifier, digits: digits))
            }
    }
}

/// The crowd counters one batch read (day → conversions that day, per crowd) plus the conversions the
/// batch itself counted so far: a conversion earlier in the batch counts toward a later one's crowd.
///
/// A count read from Redis misses the conversions other consumer loops and replicas are counting at
/// the same moment, so it is exact only once it has reached the top threshold (more conversions no
/// longer change the tier). Below it, a crowd's size comes from `ranked`: the exact rank Redis gave the
/// conversion when it counted it (`CrowdRanking`), every conversion counted before it included.
public struct CrowdCounts: Sendable {
    public var read: [Crowd: [Int64: Int]]
    /// Conversion id → crowd → its exact size as Redis counted it, itself included. A ranked crowd is
    /// already counted: `count` leaves it out of the increment.
    public var ranked: [String: [Crowd: Int]]
    var counted: [Crowd: Int] = [:]

    public init(read: [Crowd: [Int64: Int]] = [:], ranked: [String: [Crowd: Int]] = [:]) {
        self.read = read
        self.ranked = ranked
    }

    /// Sizes for the conversion, itself included: its rank in a crowd that was ranked, else each
    /// crowd's trailing-period count as of the conversion's time plus this batch's earlier conversions.
    public func sizes(for attribution: Attribution, policy: TimePolicy) -> CrowdSizes {
        let ranks = ranked[attribution.conversionIdentifier] ?? [:]
        let c = Crowd.all(for: attribution).map { crowd in
            ranks[crowd]
                ?? CrowdDayBuckets.count(read[crowd] ?? [:], at: attribution.conversionTime, policy: policy)
                + counted[crowd, default: 0] + 1
        }
        return CrowdSizes(
            publisherApp: c[0], advertisedApp: c[1], country: attribution.countryCode == nil ? nil : c[2],
            sourceIdentifierDigits: [2: c[3], 3: c[4], 4: c[5]])
    }

    /// Counts the conversion in each of its crowds (for the rest of the batch) and says what to store:
    /// every crowd but those Redis already counted it in (`ranked`).
    public mutating func count(_ attribution: Attribution, policy: TimePolicy) -> CrowdIncrement {
        let ranks = ranked[attribution.conversionIdentifier] ?? [:]
        let crowds = Crowd.all(for: attribution).filter { ranks[$0] == nil }
        for crowd in crowds { counted[crowd, default: 0] += 1 }
        let day = CrowdDayBuckets.day(of: attribution.conversionTime, policy: policy)
        return CrowdIncrement(
            crowds: crowds, day: day,
            // Days that fell out of the trailing period (a week of them, so a crowd idle for a few days is still trimmed).
            staleDays: Array((day - CrowdDayBuckets.days - 6)...(day - CrowdDayBuckets.days)).reversed(),
            keepFor: CrowdDayBuckets.keepFor(policy: policy))
    }
}

/// One conversion counted on its day in each of its crowds; stale days dropped; each crowd kept
/// `keepFor` after its last conversion.
public struct CrowdIncrement: Sendable, Hashable {
    public var crowds: [Crowd]
    public var day: Int64
    public var staleDays: [Int64]
    public var keepFor: Milliseconds

    public init(crowds: [Crowd], day: Int64, staleDays: [Int64], keepFor: Milliseconds) {
        self.crowds = crowds
        self.day = day
        self.staleDays = staleDays
        self.keepFor = keepFor
    }

    /// One crowd's day buckets once this increment is stored (what HINCRBY and HDEL leave).
    public func applied(to buckets: [Int64: Int]) -> [Int64: Int] {
        var buckets = buckets
        buckets[day, default: 0] += 1
        for stale in staleDays { buckets[stale] = nil }
        return buckets
    }
}

/// What a scheduler last did to one crowd counter besides counting: the day whose stale days it
/// trimmed, and until when it made the counter live. An increment repeats neither while they hold, so
/// a busy crowd costs one `HINCRBY` per batch instead of three commands per conversion.
public struct CrowdUpkeep: Sendable, Hashable {
    /// The latest day whose stale days were trimmed (`HDEL`).
    public var trimmedDay: Int64?
    /// When the expiry last set (`PEXPIRE`) ends, in epoch milliseconds.
    public var expiresAt: Milliseconds?

    public init(trimmedDay: Int64? = nil, expiresAt: Milliseconds? = nil) {
        self.trimmedDay = trimmedDay
        self.expiresAt = expiresAt
    }

    /// The stale days `increment`, stored at `now`, must delete (none: no `HDEL`), and whether it must
    /// extend the expiry.
    ///
    /// With the counter's days `known` (the counts the scheduler just read or holds), exactly its days
    /// that fell out of the trailing period: none for a new counter or a fresh one. Without, the week
    /// before the period once per new day (an older day's stale days lie before the newer day's,
    /// already trimmed or expired with the counter). The expiry is extended once less than three
    /// quarters of `keepFor` remain, so a counter lives at least ¾ `keepFor` (1.5 trailing periods)
    /// after its last conversion: its counts are never dropped while they can still count. A trim
    /// always comes with an expiry: a counter's increments, HDEL and a last PEXPIRE merge into three
    /// commands in the batch's transaction (`WriteCoalescing`); an HDEL without one would not.
    public func needs(_ increment: CrowdIncrement, now: Milliseconds, known: [Int64: Int]?) -> (
        trim: [Int64], expire: Bool
    ) {
        let trim: [Int64]
        if let known {
            trim = known.keys.filter { $0 <= increment.day - CrowdDayBuckets.days }.sorted()
        } else {
            trim = trimmedDay.map { increment.day > $0 } ?? true ? increment.staleDays : []
        }
        let expire = !trim.isEmpty || expiresAt.map { $0 - now < increment.keepFor / 4 * 3 } ?? true
        return (trim, expire)
    }

    /// The upkeep once `increment`'s commands (as `needs` said) are stored at `now`.
    public func after(_ increment: CrowdIncrement, now: Milliseconds, trimmed: Bool, expired: Bool) -> CrowdUpkeep {
        var next = self
        if trimmed { next.trimmedDay = max(trimmedDay ?? increment.day, increment.day) }
        if expired { next.expiresAt = now + increment.keepFor }
        return next
    }
}
