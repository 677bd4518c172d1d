import AttributionModel
import Foundation
import Testing

@Suite("Conversion windows, delays and retries")
struct TimingRulesTests {
    struct WindowCase: Sendable {
        let offset: Milliseconds
        let development: Bool
        let index: Int?
    }

    static let day = Fixture.day
    static let windowCases: [WindowCase] = [
        .init(offset: 0, development: false, index: 0),
        .init(offset: 2 * day - 1, development: false, index: 0),
        .init(offset: 2 * day, development: false, index: 1),
        .init(offset: 7 * day - 1, development: false, index: 1),
        .init(offset: 7 * day, development: false, index: 2),
        .init(offset: 35 * day - 1, development: false, index: 2),
        .init(offset: 35 * day, development: false, index: nil),
        .init(offset: 3 * 60_000 - 1, development: true, index: 0),
        .init(offset: 3 * 60_000, development: true, index: 1),
        .init(offset: 9 * 60_000, development: true, index: nil),
    ]

    @Test("window boundaries (days 0–2, 3–7, 8–35; development 3 minutes each)", arguments: windowCases)
    func windowIndex(_ c: WindowCase) {
        #expect(ConversionWindows.index(atOffset: c.offset, development: c.development, policy: .realTime) == c.index)
    }

    @Test func delaysStayInTheirRanges() {
        var generator = SeededGenerator(seed: 1)
        for _ in 0..<2_000 {
            let first = PostbackDelay.draw(sequenceIndex: 0, development: false, policy: .realTime, using: &generator)
            #expect((24 * Fixture.hour...48 * Fixture.hour).contains(first))
            let later = PostbackDelay.draw(sequenceIndex: 2, development: false, policy: .realTime, using: &generator)
            #expect((24 * Fixture.hour...144 * Fixture.hour).contains(later))
            let development = PostbackDelay.draw(sequenceIndex: 1, development: true, policy: .realTime, using: &generator)
            #expect(development == 5 * 60_000, "developer mode is time-deterministic: exactly 5 minutes")
        }
    }

    /// Kolmogorov–Smirnov: delays drawn with the services' generator (`SystemRandomNumberGenerator`, the
    /// kernel's CSPRNG) fit the uniform distribution over each range. Critical value at α = 10⁻⁶
    /// (√(−ln(α/2)/2)/√n ≈ 2.69/√n), so the test fails on a real bias, practically never by chance.
    @Test(arguments: [(0, false), (1, false), (2, false)])
    func delaysAreUniformOverTheirRange(_ sequenceIndex: Int, _ development: Bool) {
        var generator = SystemRandomNumberGenerator()
        let n = 20_000
        let range = PostbackDelay.range(sequenceIndex: sequenceIndex, development: development)
        let low = Double(TimePolicy.realTime.milliseconds(range.lowerBound))
        let high = Double(TimePolicy.realTime.milliseconds(range.upperBound))
        let draws = (0..<n).map { _ in
            Double(
                PostbackDelay.draw(sequenceIndex: sequenceIndex, development: development, policy: .realTime, using: &generator))
        }.sorted()
        #expect(draws.first! >= low && draws.last! <= high)
        var d = 0.0
        for (i, x) in draws.enumerated() {
            let cdf = (x - low) / (high - low)
            d = max(d, Double(i + 1) / Double(n) - cdf, cdf - Double(i) / Double(n))
        }
        let critical = (-log(1e-6 / 2) / 2).squareRoot() / Double(n).squareRoot()
        #expect(d < critical, "KS statistic \(d) ≥ \(critical): the delays are not uniform over \(low)...\(high) ms")
    }

    @Test(
        "window-close grace: as configured, capped at half the shortest delay",
        arguments: [
            (10_000, false, 1.0, 10_000),  // real time: 10 s of 24 h
            (10_000, false, 172_800.0, 250),  // a day lasts 0.5 s: half of 24 h's 500 ms
            (400, false, 172_800.0, 250),
            (400, true, 60.0, 400),  // development: 5 minutes last 5 s
            (10_000, true, 60.0, 2_500),
            (0, false, 1.0, 0),
        ] as [(Milliseconds, Bool, Double, Milliseconds)])
    func windowCloseGrace(_ configured: Milliseconds, _ development: Bool, _ scale: Double, _ expected: Milliseconds) {
        #expect(
            ConversionWindows.closeGrace(configured: configured, development: development, policy: TimePolicy(scale: scale))
                == expected)
    }

    @Test(
        "conversion settle: as configured, capped at half the first window's scaled length",
        arguments: [
            (2_000, 1.0, 2_000),  // real time: 2 s of a 2-day window
            (2_000, 86_400.0, 1_000),  // the demo's scale: the first window lasts 2 s, so 2 s would take all of it
            (250, 86_400.0, 250),
            (2_000, 172_800.0, 500),  // the tests' scale: a 1 s first window
            (0, 86_400.0, 0),
            (3_600_000, 1.0, 3_600_000),  // an hour is far below 24 h
        ] as [(Milliseconds, Double, Milliseconds)])
    func conversionSettle(_ configured: Milliseconds, _ scale: Double, _ expected: Milliseconds) {
        #expect(ConversionWindows.settle(configured: configured, policy: TimePolicy(scale: scale)) == expected)
    }

    @Test(
        "crowd counts: the conversion's day and the 29 before it",
        arguments: [
            ([0: 3, -29: 2], 5),  // the oldest day still counted
            ([0: 3, -30: 5], 3),  // 30 days back: out
            ([0: 1, 1: 7], 1),  // a later day (a conversion processed out of order) is not "trailing"
            ([:], 0),
        ] as [([Int64: Int], Int)])
    func crowdDayBuckets(_ relative: [Int64: Int], _ expected: Int) {
        for policy in [TimePolicy.realTime, TimePolicy(scale: 86_400)] {
            let time: Milliseconds = 1_800_000_000_000
            let today = CrowdDayBuckets.day(of: time, policy: policy)
            let buckets = Dictionary(uniqueKeysWithValues: relative.map { (today + $0.key, $0.value) })
            #expect(CrowdDayBuckets.count(buckets, at: time, policy: policy) == expected)
        }
        #expect(CrowdDayBuckets.day(of: 86_399_999, policy: .realTime) == 0)
        #expect(CrowdDayBuckets.day(of: 86_400_000, policy: .realTime) == 1)
    }

    @Test func delaysAreScaled() {
        var generator = SeededGenerator(seed: 2)
        let delay = PostbackDelay.draw(sequenceIndex: 0, development: false, policy: TimePolicy(scale: 86_400), using: &generator)
        #expect((1_000...2_000).contains(delay))
    }

    @Test func retriesAreAtMostNineAndAllWithinNineDays() {
        var generator = SeededGenerator(seed: 3)
        for _ in 0..<500 {
            var total: Milliseconds = 0
            var previous: Milliseconds = 0
            for attempt in 1...9 {
                let delay = try! #require(RetrySchedule.delay(afterFailedAttempts: attempt, policy: .realTime, using: &generator))
                #expect(delay >= previous || attempt == 1, "intervals grow")
                previous = delay
                total += delay
            }
            #expect(total < 9 * Fixture.day)
            #expect(RetrySchedule.delay(afterFailedAttempts: 10, policy: .realTime, using: &generator) == nil)
        }
    }
}

@Suite("Crowd tiers, truncation and field gating")
struct CrowdRulesTests {
    struct TierCase: Sendable {
        let publisher: Int, advertised: Int, country: Int?
        let digits: [Int: Int]
        let tier: Int, kept: Int, countryTierThree: Bool
    }

    // Thresholds 10 / 100 / 1000.
    static let tierCases: [TierCase] = [
        .init(publisher: 1, advertised: 1, country: 1, digits: [2: 1, 3: 1, 4: 1], tier: 0, kept: 2, countryTierThree: false),
        .init(
            publisher: 10, advertised: 10, country: 50, digits: [2: 10, 3: 9, 4: 1], tier: 1, kept: 2, countryTierThree: false),
        // Tier 1 at every length: 2 digits, even though ties go toward more digits.
        .init(
            publisher: 50, advertised: 50, country: 50, digits: [2: 50, 3: 50, 4: 50], tier: 1, kept: 2, countryTierThree: false),
        .init(
            publisher: 500, advertised: 500, country: 500, digits: [2: 500, 3: 100, 4: 99], tier: 2, kept: 3,
            countryTierThree: false),
        // The country's crowd caps the tier like the apps' (spec §5): a small country, tier 0 …
        .init(
            publisher: 5000, advertised: 5000, country: 5, digits: [2: 5000, 3: 5000, 4: 5000], tier: 0, kept: 2,
            countryTierThree: false),
        // … a country of tier 2 keeps the 3 digits a tier-2 source id allows, and no country code.
        .init(
            publisher: 5000, advertised: 5000, country: 500, digits: [2: 5000, 3: 5000, 4: 5000], tier: 2, kept: 4,
            countryTierThree: false),
        // No country code: no country crowd bounds the tier, and none can be sent.
        .init(
            publisher: 5000, advertised: 5000, country: nil, digits: [2: 5000, 3: 5000, 4: 5000], tier: 3, kept: 4,
            countryTierThree: false),
        .init(
            publisher: 5000, advertised: 5000, country: 1000, digits: [2: 5000, 3: 1000, 4: 1000], tier: 3, kept: 4,
            countryTierThree: true),
        .init(
            publisher: 5000, advertised: 5000, country: 1000, digits: [2: 5000, 3: 1000, 4: 999], tier: 3, kept: 3,
            countryTierThree: true),
        // The smallest app crowd caps the tier.
        .init(
            publisher: 99, advertised: 5000, country: 5000, digits: [2: 5000, 3: 5000, 4: 5000], tier: 1, kept: 2,
            countryTierThree: true),
    ]

    @Test(arguments: tierCases)
    func assessesTier(_ c: TierCase) {
        let sizes = CrowdSizes(
            publisherApp: c.publisher, advertisedApp: c.advertised, country: c.country, sourceIdentifierDigits: c.digits)
        let assessment = CrowdAssessment.assess(sizes, thresholds: CrowdTierThresholds())
        #expect(assessment.tier.rawValue == c.tier)
        #expect(assessment.sourceIdentifierDigits == c.kept)
        #expect(assessment.countryIsTierThree == c.countryTierThree)
    }

    @Test(arguments: [
        (5239, 2, "39"), (5239, 3, "239"), (5239, 4, "5239"), (7, 2, "07"), (0, 4, "0000"), (9999, 2, "99"), (1005, 2, "05"),
    ])
    func truncatesToLeastSignificantDigits(_ source: Int, _ digits: Int, _ expected: String) {
        #expect(SourceIdentifierTruncation.truncate(source, digits: digits) == expected)
    }

    @Test func parsesThresholds() {
        #expect(CrowdTierThresholds(parsing: "1, 5,20") == CrowdTierThresholds(tier1: 1, tier2: 5, tier3: 20))
        #expect(CrowdTierThresholds(parsing: "5,1,20") == nil)
        #expect(CrowdTierThresholds(parsing: "1,2") == nil)
    }

    struct GatingCase: Sendable {
        let tier: Int, index: Int, didWin: Bool
        let digits: Int?, fine: Int?, coarse: CoarseConversionValue?, publisher: Bool, country: Bool, marketplace: Bool
    }

    // Values set: fine 42, coarse high; crowd allows 4 digits and the country is tier 3.
    static let gatingCases: [GatingCase] = [
        .init(
            tier: 0, index: 0, didWin: true, digits: 2, fine: nil, coarse: nil, publisher: false, country: false,
            marketplace: false),
        .init(
            tier: 1, index: 0, didWin: true, digits: 2, fine: nil, coarse: .high, publisher: false, country: false,
            marketplace: true),
        .init(
            tier: 2, index: 0, didWin: true, digits: 4, fine: 42, coarse: nil, publisher: false, country: false, marketplace: true
        ),
        .init(
            tier: 3, index: 0, didWin: true, digits: 4, fine: 42, coarse: nil, publisher: true, country: true, marketplace: true),
        .init(
            tier: 0, index: 1, didWin: true, digits: nil, fine: nil, coarse: nil, publisher: false, country: false,
            marketplace: false),
        .init(
            tier: 1, index: 1, didWin: true, digits: 2, fine: nil, coarse: .high, publisher: false, country: false,
            marketplace: true),
        .init(
            tier: 3, index: 2, didWin: true, digits: 2, fine: nil, coarse: .high, publisher: false, country: false,
            marketplace: true),
        .init(
            tier: 3, index: 0, didWin: false, digits: 2, fine: nil, coarse: .high, publisher: false, country: false,
            marketplace: true),
        .init(
            tier: 0, index: 0, didWin: false, digits: 2, fine: nil, coarse: nil, publisher: false, country: false,
            marketplace: false),
        .init(
            tier: 3, index: 1, didWin: false, digits: nil, fine: nil, coarse: nil, publisher: false, country: false,
            marketplace: false),
    ]

    @Test("fields per tier, window and winning status", arguments: gatingCases)
    func gatesFields(_ c: GatingCase) {
        let crowd = CrowdAssessment(
            tier: CrowdTier(rawValue: c.tier), sourceIdentifierDigits: c.tier >= 2 ? 4 : 2, countryIsTierThree: true)
        let fields = PostbackFieldGating.fields(
            sequenceIndex: c.index, didWin: c.didWin, values: .init(fine: 42, coarse: .high), crowd: crowd)
        #expect(fields?.sourceIdentifierDigits == c.digits)
        guard let fields else { return }
        #expect(fields.conversionValue == c.fine)
        #expect(fields.coarseConversionValue == c.coarse)
        #expect(!(fields.conversionValue != nil && fields.coarseConversionValue != nil), "never both")
        #expect(fields.includesPublisherItemIdentifier == c.publisher)
        #expect(fields.includesCountryCode == c.country)
        #expect(fields.includesMarketplace == c.marketplace)
    }
}
