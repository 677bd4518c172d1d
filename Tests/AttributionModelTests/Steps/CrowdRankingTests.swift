import AttributionModel
import Foundation
import Testing

/// Which crowds a batch asks Redis to rank, and how ranks decide sizes and increments.
@Suite struct CrowdRankingTests {
    static let policy = TimePolicy.realTime
    static let thresholds = CrowdTierThresholds()
    static let time: Milliseconds = 1_764_000_000_000

    static func attribution(_ id: String, publisher: ItemIdentifier = 11, country: String? = "DE") -> Attribution {
        Attribution(
            conversionIdentifier: id, advertisedItemIdentifier: 22, conversionType: .download, conversionTime: time,
            countryCode: country,
            winner: AttributedImpression(
                adNetworkIdentifier: AdNetworkIdentifier("rank.adattributionkit")!, impressionIdentifier: "impression-\(id)",
                sourceIdentifier: 4_321, publisherItemIdentifier: publisher, interactionType: .click, kind: .adAttributionKit),
            nonWinners: [])
    }

    static var today: Int64 { CrowdDayBuckets.day(of: time, policy: policy) }

    /// Every crowd below the top threshold is ranked, each conversion once, in batch order; a crowd read
    /// at the top threshold (itself included) is not, nor a development conversion, nor the country
    /// crowd of a conversion without a country.
    @Test func ranksOnlyWhatTheCountsReadCannotSettle() {
        let first = Self.attribution("a")
        let settled: Crowd = .advertisedApp(22)
        let read: [Crowd: [Int64: Int]] = [settled: [Self.today: 999], .publisherApp(11): [Self.today: 998]]
        let batch = [first, first, Self.attribution("b", country: nil), Self.attribution("dev", publisher: 0)]
        let requests = CrowdRanking.requests(for: batch, read: read, thresholds: Self.thresholds, policy: Self.policy)
        let crowds = requests.map(\.crowd)
        #expect(!crowds.contains(settled), "999 read and itself: 1,000, tier 3 whatever else is counted")
        #expect(crowds.contains(.publisherApp(11)), "998 read and itself: 999, below the top threshold")
        #expect(crowds.filter { if case .country = $0 { true } else { false } } == [.country("DE")])
        #expect(requests.first { $0.crowd == .publisherApp(11) }?.conversions.map(\.conversionIdentifier) == ["a", "b"])
        #expect(!requests.flatMap(\.conversions).contains { $0.conversionIdentifier == "dev" })
    }

    /// A conversion's size in a ranked crowd is its rank; the rest come from the counts read plus the
    /// batch's earlier conversions; its increment leaves out what Redis already counted.
    @Test func ranksDecideSizesAndLeaveTheirCrowdsOutOfTheIncrement() {
        let a = Self.attribution("a")
        let b = Self.attribution("b")
        let requests = [
            CrowdRanking.Request(
                crowd: .publisherApp(11),
                conversions: [a, b].map {
                    CrowdRanking.Member(conversionIdentifier: $0.conversionIdentifier, conversionTime: $0.conversionTime)
                })
        ]
        var counts = CrowdCounts(
            read: [.advertisedApp(22): [Self.today: 5_000]], ranked: CrowdRanking.ranked(requests, ranks: [[41, 42]]))
        #expect(counts.sizes(for: a, policy: Self.policy).publisherApp == 41)
        #expect(counts.sizes(for: a, policy: Self.policy).advertisedApp == 5_001)
        let increment = counts.count(a, policy: Self.policy)
        #expect(!increment.crowds.contains(.publisherApp(11)))
        #expect(increment.crowds.contains(.advertisedApp(22)))
        #expect(counts.sizes(for: b, policy: Self.policy).publisherApp == 42)
        #expect(counts.sizes(for: b, policy: Self.policy).advertisedApp == 5_002, "a counted for the rest of the batch")
    }
}
