/// Which crowds of a batch's new conversions must be counted by Redis itself, one conversion after
/// another, so that each gets its exact size.
///
/// A crowd count read before deciding misses the conversions that other consumer loops and replicas
/// are counting at the same moment: up to a few thousand with the default loops and batches. Once a
/// crowd has reached the top threshold that cannot change its tier, so the count read is exact enough;
/// below it, the batch asks Redis to count each of its conversions in that crowd atomically and to say
/// the crowd's size just after (its rank: every conversion counted before it, and itself). A crowd
/// below the top threshold gets few conversions, so this costs little where it is needed and nothing
/// where crowds are large.
public enum CrowdRanking {
    /// One crowd to rank, with the batch's new conversions in it, in batch order.
    public struct Request: Sendable, Hashable {
        public var crowd: Crowd
        public var conversions: [Member]

        public init(crowd: Crowd, conversions: [Member]) {
            self.crowd = crowd
            self.conversions = conversions
        }
    }

    /// A conversion to count in a crowd: its identifier (what makes counting it again a no-op) and its time.
    public struct Member: Sendable, Hashable {
        public var conversionIdentifier: String
        public var conversionTime: Milliseconds

        public init(conversionIdentifier: String, conversionTime: Milliseconds) {
            self.conversionIdentifier = conversionIdentifier
            self.conversionTime = conversionTime
        }
    }

    /// The crowds of `attributions` (the batch's conversions without a plan yet, in batch order) that
    /// the counts `read` cannot settle: some conversion of the crowd would be below the top threshold
    /// with what was read. Development conversions count in no crowd, and a conversion without a
    /// country code has no country crowd to rank.
    public static func requests(
        for attributions: [Attribution], read: [Crowd: [Int64: Int]], thresholds: CrowdTierThresholds, policy: TimePolicy
    ) -> [Request] {
        var order: [Crowd] = []
        var members: [Crowd: [Member]] = [:]
        var seen = Set<String>()
        for attribution in attributions where !attribution.isDevelopment {
            guard seen.insert(attribution.conversionIdentifier).inserted else { continue }
            let member = Member(
                conversionIdentifier: attribution.conversionIdentifier, conversionTime: attribution.conversionTime)
            for crowd in Crowd.all(for: attribution) {
                if case .country = crowd, attribution.countryCode == nil { continue }
                if members[crowd] == nil { order.append(crowd) }
                members[crowd, default: []].append(member)
            }
        }
        return order.compactMap { crowd in
            let conversions = members[crowd] ?? []
            let settled = conversions.allSatisfy { member in
                CrowdDayBuckets.count(read[crowd] ?? [:], at: member.conversionTime, policy: policy) + 1 >= thresholds.tier3
            }
            return settled ? nil : Request(crowd: crowd, conversions: conversions)
        }
    }

    /// The ranks Redis answered (one list per request, one rank per member) as `CrowdCounts.ranked`.
    public static func ranked(_ requests: [Request], ranks: [[Int]]) -> [String: [Crowd: Int]] {
        var ranked: [String: [Crowd: Int]] = [:]
        for (request, ranks) in zip(requests, ranks) {
            for (member, rank) in zip(request.conversions, ranks) {
                ranked[member.conversionIdentifier, default: [:]][request.crowd] = rank
            }
        }
        return ranked
    }
}
