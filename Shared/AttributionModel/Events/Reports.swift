/// What ingest accepted from the outside world, as it goes onto the `events` stream.
/// `receivedAt` is ingest's clock; every other time is the reporter's (the rules use event time).

/// An impression with the interaction the device reported: an AdAttributionKit compact JWS as the ad
/// network signed it, or a SKAdNetwork 4.0 impression (both compete in one pool).
public struct ImpressionReport: Sendable, Codable, Hashable {
    public var deviceIdentifier: String
    public var impression: String?
    public var skadnetworkImpression: SKANImpression?
    public var interaction: Interaction
    public var receivedAt: Milliseconds

    public init(deviceIdentifier: String, impression: String, interaction: Interaction, receivedAt: Milliseconds) {
        self.deviceIdentifier = deviceIdentifier
        self.impression = impression
        self.interaction = interaction
        self.receivedAt = receivedAt
    }

    public init(
        deviceIdentifier: String, skadnetworkImpression: SKANImpression, interaction: Interaction, receivedAt: Milliseconds
    ) {
        self.deviceIdentifier = deviceIdentifier
        self.skadnetworkImpression = skadnetworkImpression
        self.interaction = interaction
        self.receivedAt = receivedAt
    }

    enum CodingKeys: String, CodingKey {
        case deviceIdentifier = "device-identifier"
        case impression
        case skadnetworkImpression = "skadnetwork-impression"
        case interaction
        case receivedAt = "received-at"
    }
}

/// An install (download, redownload) or re-engagement of an advertised app on a device.
public struct ConversionReport: Sendable, Codable, Hashable {
    public var deviceIdentifier: String
    public var advertisedItemIdentifier: ItemIdentifier
    public var conversionType: ConversionType
    public var time: Milliseconds
    /// Two-letter country of the store front; only ever sent on when its crowd is large (tier 3).
    public var countryCode: String?
    public var receivedAt: Milliseconds
    /// Re-engagements only: the tag ingest returned (the `AdAttributionKitReengagementOpen` value);
    /// updates carrying it apply to this conversion alone.
    public var conversionTag: String?
    /// An alternative marketplace's bundle id; nil: the App Store.
    public var marketplaceIdentifier: String?

    public init(
        deviceIdentifier: String, advertisedItemIdentifier: ItemIdentifier, conversionType: ConversionType,
        time: Milliseconds, countryCode: String? = nil, receivedAt: Milliseconds, conversionTag: String? = nil,
        marketplaceIdentifier: String? = nil
    ) {
        self.conversionTag = conversionTag
        self.marketplaceIdentifier = marketplaceIdentifier
        self.deviceIdentifier = deviceIdentifier
        self.advertisedItemIdentifier = advertisedItemIdentifier
        self.conversionType = conversionType
        self.time = time
        self.countryCode = countryCode
        self.receivedAt = receivedAt
    }

    enum CodingKeys: String, CodingKey {
        case deviceIdentifier = "device-identifier"
        case advertisedItemIdentifier = "advertised-item-identifier"
        case conversionType = "conversion-type"
        case time
        case countryCode = "country-code"
        case receivedAt = "received-at"
        case conversionTag = "conversion-tag"
        case marketplaceIdentifier = "marketplace-identifier"
    }
}

/// A conversion-value update reported by the advertised app on a device.
public struct ValueUpdateReport: Sendable, Codable, Hashable {
    public var deviceIdentifier: String
    public var advertisedItemIdentifier: ItemIdentifier
    public var update: PostbackUpdate
    public var time: Milliseconds
    public var receivedAt: Milliseconds
    /// The `events` id that reported it: attribution-winner sets it when routing, so that the routed
    /// message names its event even after waiting for its conversion (the fault run's ledger traces it).
    public var eventIdentifier: String?
    /// True when the app reported it in SKAdNetwork's shape (`fineValue`, `coarseValue`, `lockWindow`):
    /// it updates the app's pending conversion as any update does, whichever framework's impression won,
    /// and when no conversion takes it, it is ignored and counted rather than refused (Apple ignores
    /// SKAdNetwork updates with no pending postback, as for an organic install). Nil otherwise.
    public var skadnetworkShape: Bool?

    public init(
        deviceIdentifier: String, advertisedItemIdentifier: ItemIdentifier, update: PostbackUpdate,
        time: Milliseconds, receivedAt: Milliseconds, skadnetworkShape: Bool? = nil
    ) {
        self.deviceIdentifier = deviceIdentifier
        self.advertisedItemIdentifier = advertisedItemIdentifier
        self.update = update
        self.time = time
        self.receivedAt = receivedAt
        self.skadnetworkShape = skadnetworkShape
    }

    enum CodingKeys: String, CodingKey {
        case deviceIdentifier = "device-identifier"
        case advertisedItemIdentifier = "advertised-item-identifier"
        case update, time
        case receivedAt = "received-at"
        case eventIdentifier = "event-identifier"
        case skadnetworkShape = "skadnetwork-shape"
    }
}
