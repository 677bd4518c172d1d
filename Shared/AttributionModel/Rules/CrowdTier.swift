import Foundation

/// Crowd anonymity tier (0–3): how much a postback may reveal, from the size of the crowds it hides in.
public struct CrowdTier: RawRepresentable, Sendable, Hashable, Comparable, Codable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = min(3, max(0, rawValue)) }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public static let zero = CrowdTier(rawValue: 0)
    public static let one = CrowdTier(rawValue: 1)
    public static let two = CrowdTier(rawValue: 2)
    public static let three = CrowdTier(rawValue: 3)
}

/// Distinct conversions over a trailing 30 days needed for tiers 1, 2 and 3 (our decision, section 8).
public struct CrowdTierThresholds: Sendable, Hashable, Codable {
    public var tier1: Int
    public var tier2: Int
    public var tier3: Int

    public init(tier1: Int = 10, tier2: Int = 100, tier3: Int = 1_000) {
        self.tier1 = tier1
        self.tier2 = tier2
        self.tier3 = tier3
    }

    public static let trailingPeriod: Duration = .days(30)

    /// Parses "10,100,1000".
    public init?(parsing text: String) {
        let parts = text.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 3, parts[0] >= 0, parts[0] <= parts[1], parts[1] <= parts[2] else { return nil }
        self.init(tier1: parts[0], tier2: parts[1], tier3: parts[2])
    }

    public func tier(forCrowdSize size: Int) -> CrowdTier {
        if size >= tier3 { return .three }
        if size >= tier2 { return .two }
        if size >= tier1 { return .one }
        return .zero
    }
}

/// The crowd sizes one conversion's tier is computed from.
public struct CrowdSizes: Sendable, Hashable {
    public var publisherApp: Int
    public var advertisedApp: Int
    /// The country's crowd; nil when the conversion carries no country code (then no country crowd
    /// bounds the tier, and no country code can be sent).
    public var country: Int?
    /// Crowd of the source id kept at 2, 3 and 4 digits.
    public var sourceIdentifierDigits: [Int: Int]

    public init(publisherApp: Int, advertisedApp: Int, country: Int?, sourceIdentifierDigits: [Int: Int]) {
        self.publisherApp = publisherApp
        self.advertisedApp = advertisedApp
        self.country = country
        self.sourceIdentifierDigits = sourceIdentifierDigits
    }
}

/// A conversion's tier and how many source-id digits its postbacks may carry.
public struct CrowdAssessment: Sendable, Hashable, Codable {
    public var tier: CrowdTier
    public var sourceIdentifierDigits: Int
    /// The country code may be sent only when the country's own crowd is tier 3.
    public var countryIsTierThree: Bool

    public init(tier: CrowdTier, sourceIdentifierDigits: Int, countryIsTierThree: Bool) {
        self.tier = tier
        self.sourceIdentifierDigits = sourceIdentifierDigits
        self.countryIsTierThree = countryIsTierThree
    }

    /// Development impressions get the highest tier (Apple's developer mode).
    public static let development = CrowdAssessment(tier: .three, sourceIdentifierDigits: 4, countryIsTierThree: true)

    /// The publisher app's, the advertised app's and the country's crowds cap the tier (spec §5: the
    /// tier is assessed from all four crowds; each is the smallest group the postback could single a
    /// device out in, so the smallest decides). Then a tier for each of the 2-, 3- and 4-digit source
    /// ids under that cap: the highest wins, ties toward more digits, and 2 digits whenever the tier is
    /// 0 or 1.
    public static func assess(_ sizes: CrowdSizes, thresholds: CrowdTierThresholds) -> CrowdAssessment {
        let countryTier = sizes.country.map { thresholds.tier(forCrowdSize: $0) }
        let appTier = min(
            thresholds.tier(forCrowdSize: sizes.publisherApp), thresholds.tier(forCrowdSize: sizes.advertisedApp),
            countryTier ?? .three)
        var best = (tier: CrowdTier.zero, digits: 2)
        for digits in 2...4 {
            let tier = min(appTier, thresholds.tier(forCrowdSize: sizes.sourceIdentifierDigits[digits] ?? 0))
            if tier >= best.tier { best = (tier, digits) }
        }
        if best.tier <= .one { best.digits = 2 }
        return CrowdAssessment(
            tier: best.tier, sourceIdentifierDigits: best.digits,
            countryIsTierThree: countryTier == .three)
    }
}

/// Source id truncation keeps the least-significant digits: 5239 → "39" at 2 digits.
public enum SourceIdentifierTruncation {
    public static func truncate(_ sourceIdentifier: Int, digits: Int) -> String {
        precondition((2...4).contains(digits), "source ids are sent with 2 to 4 digits")
        var modulus = 1
        for _ in 0..<digits { modulus *= 10 }
        let kept = String(sourceIdentifier % modulus)
        return String(repeating: "0", count: max(0, digits - kept.count)) + kept
    }
}

/// Crowd counters keep one count per (scaled) day per crowd key, so their memory is bounded by the
/// number of crowds, not of conversions: "the trailing 30 days" is the conversion's day and the 29
/// whole days before it. Conversions reach the scheduler once each (a redelivery finds its plan and
/// is skipped), so counting them counts distinct conversions.
public enum CrowdDayBuckets {
    public static func day(of time: Milliseconds, policy: TimePolicy) -> Int64 {
        let length = max(1, policy.milliseconds(.days(1)))
        return time >= 0 ? time / length : (time - length + 1) / length
    }

    /// How long a crowd's counter lives after its last conversion: two trailing periods.
    public static func keepFor(policy: TimePolicy) -> Milliseconds {
        policy.milliseconds(CrowdTierThresholds.trailingPeriod) * 2
    }

    /// How many days the trailing period spans.
    public static var days: Int64 { CrowdTierThresholds.trailingPeriod.components.seconds / 86_400 }

    /// Conversions counted in `buckets` (day → count) within the trailing period as of `time`.
    public static func count(_ buckets: [Int64: Int], at time: Milliseconds, policy: TimePolicy) -> Int {
        let today = day(of: time, policy: policy)
        return buckets.filter { $0.key > today - days && $0.key <= today }.values.reduce(0, +)
    }
}
