/// The facts about one impression that a postback may need. No device identifier: from here on the
/// pipeline only knows conversions by their random id.
public struct AttributedImpression: Sendable, Codable, Hashable {
    public var adNetworkIdentifier: AdNetworkIdentifier
    public var impressionIdentifier: String
    public var sourceIdentifier: Int
    public var publisherItemIdentifier: ItemIdentifier
    public var interactionType: InteractionType
    public var kind: ImpressionKind

    public init(
        adNetworkIdentifier: AdNetworkIdentifier, impressionIdentifier: String, sourceIdentifier: Int,
        publisherItemIdentifier: ItemIdentifier, interactionType: InteractionType, kind: ImpressionKind
    ) {
        self.adNetworkIdentifier = adNetworkIdentifier
        self.impressionIdentifier = impressionIdentifier
        self.sourceIdentifier = sourceIdentifier
        self.publisherItemIdentifier = publisherItemIdentifier
        self.interactionType = interactionType
        self.kind = kind
    }

    public init(_ impression: VerifiedImpression) {
        self.init(
            adNetworkIdentifier: impression.payload.adNetworkIdentifier,
            impressionIdentifier: impression.payload.impressionIdentifier,
            sourceIdentifier: impression.payload.sourceIdentifier,
            publisherItemIdentifier: impression.payload.publisherItemIdentifier,
            interactionType: impression.interaction.type, kind: impression.kind)
    }

    public var isDevelopment: Bool { publisherItemIdentifier == 0 }

    enum CodingKeys: String, CodingKey {
        case adNetworkIdentifier = "ad-network-identifier"
        case impressionIdentifier = "impression-identifier"
        case sourceIdentifier = "source-identifier"
        case publisherItemIdentifier = "publisher-item-identifier"
        case interactionType = "interaction-type"
        case kind
    }
}

/// A conversion with its winner and up to five non-winners: attribution-winner's output.
public struct Attribution: Sendable, Codable, Hashable {
    public var conversionIdentifier: String
    public var advertisedItemIdentifier: ItemIdentifier
    public var conversionType: ConversionType
    public var conversionTime: Milliseconds
    public var countryCode: String?
    public var winner: AttributedImpression
    public var nonWinners: [AttributedImpression]
    public var conversionTag: String?
    /// The store the app came from when not the App Store (its bundle id); postbacks name it.
    public var marketplaceIdentifier: String?

    public init(
        conversionIdentifier: String, advertisedItemIdentifier: ItemIdentifier, conversionType: ConversionType,
        conversionTime: Milliseconds, countryCode: String?, winner: AttributedImpression,
        nonWinners: [AttributedImpression], conversionTag: String? = nil, marketplaceIdentifier: String? = nil
    ) {
        self.conversionTag = conversionTag
        self.marketplaceIdentifier = marketplaceIdentifier
        self.conversionIdentifier = conversionIdentifier
        self.advertisedItemIdentifier = advertisedItemIdentifier
        self.conversionType = conversionType
        self.conversionTime = conversionTime
        self.countryCode = countryCode
        self.winner = winner
        self.nonWinners = nonWinners
    }

    /// Development timings (3-minute windows, short delays) apply when the winner is a development impression.
    public var isDevelopment: Bool { winner.isDevelopment }

    enum CodingKeys: String, CodingKey {
        case conversionIdentifier = "conversion-identifier"
        case advertisedItemIdentifier = "advertised-item-identifier"
        case conversionType = "conversion-type"
        case conversionTime = "conversion-time"
        case countryCode = "country-code"
        case winner
        case nonWinners = "non-winners"
        case conversionTag = "conversion-tag"
        case marketplaceIdentifier = "marketplace-identifier"
    }
}

/// A newer conversion locked this one's open postbacks (re-engagement without the overlapping opt-in).
public struct ConversionSuperseded: Sendable, Codable, Hashable {
    public var conversionIdentifier: String
    public var supersededBy: String
    public var time: Milliseconds

    public init(conversionIdentifier: String, supersededBy: String, time: Milliseconds) {
        self.conversionIdentifier = conversionIdentifier
        self.supersededBy = supersededBy
        self.time = time
    }

    enum CodingKeys: String, CodingKey {
        case conversionIdentifier = "conversion-identifier"
        case supersededBy = "superseded-by"
        case time
    }
}

/// A value update resolved to the conversion it applies to.
public struct AttributedUpdate: Sendable, Codable, Hashable {
    public var conversionIdentifier: String
    public var update: PostbackUpdate
    public var time: Milliseconds
    /// The reported event's id, traced by operators and the fault run's ledger (no device in it).
    public var eventIdentifier: String?

    public init(conversionIdentifier: String, update: PostbackUpdate, time: Milliseconds, eventIdentifier: String? = nil) {
        self.conversionIdentifier = conversionIdentifier
        self.update = update
        self.time = time
        self.eventIdentifier = eventIdentifier
    }

    enum CodingKeys: String, CodingKey {
        case conversionIdentifier = "conversion-identifier"
        case update, time
        case eventIdentifier = "event-identifier"
    }
}

/// The scheduler's own timer: a conversion window reached its end.
public struct WindowClosed: Sendable, Codable, Hashable {
    public var conversionIdentifier: String
    public var window: Int
    public var time: Milliseconds

    public init(conversionIdentifier: String, window: Int, time: Milliseconds) {
        self.conversionIdentifier = conversionIdentifier
        self.window = window
        self.time = time
    }

    enum CodingKeys: String, CodingKey {
        case conversionIdentifier = "conversion-identifier"
        case window, time
    }
}
