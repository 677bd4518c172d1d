import AttributionModel

/// Builders for readable test tables.
enum Fixture {
    /// One key for every plan of a test run: a conversion's identifiers are the same however often planned.
    static let identifiers = PostbackIdentifiers.ephemeral()
    static let app: ItemIdentifier = 1_108_187_390
    static let day: Milliseconds = 86_400_000
    static let hour: Milliseconds = 3_600_000

    static func network(_ name: String) -> AdNetworkIdentifier { AdNetworkIdentifier(name)! }

    static func impression(
        _ id: String, network: String = "one.adattributionkit", type: InteractionType = .click,
        at time: Milliseconds, publisher: ItemIdentifier = 5_838_492, source: Int = 5239,
        reengagement: Bool? = nil, app: ItemIdentifier = Fixture.app
    ) -> VerifiedImpression {
        VerifiedImpression(
            deviceIdentifier: "device-1",
            payload: ImpressionPayload(
                impressionIdentifier: id, adNetworkIdentifier: Fixture.network(network), advertisedItemIdentifier: app,
                publisherItemIdentifier: publisher, sourceIdentifier: source, timestamp: time,
                eligibleForReengagement: reengagement),
            interaction: type == .click ? .click(at: time, loadedAt: time) : .view(begin: time - 3_000, end: time),
            kind: .adAttributionKit)
    }

    static func attribution(
        tierWinner: AttributedImpression? = nil, nonWinners: [AttributedImpression] = [], type: ConversionType = .download,
        at time: Milliseconds = 0, country: String? = "US", publisher: ItemIdentifier = 5_838_492
    ) -> Attribution {
        let winner =
            tierWinner
            ?? AttributedImpression(
                adNetworkIdentifier: network("one.adattributionkit"), impressionIdentifier: "w", sourceIdentifier: 5239,
                publisherItemIdentifier: publisher, interactionType: .click, kind: .adAttributionKit)
        return Attribution(
            conversionIdentifier: "c-1", advertisedItemIdentifier: app, conversionType: type, conversionTime: time,
            countryCode: country, winner: winner, nonWinners: nonWinners)
    }
}

/// The model's seeded generator, under the name these tests use.
typealias SeededGenerator = SplitMix64
