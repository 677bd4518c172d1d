/// The signed payload of an AdAttributionKit impression (compact JWS, ES256, `kid` = ad network id).
/// Key spellings are the spec's: ad networks produce these with their existing code.
public struct ImpressionPayload: Sendable, Codable, Hashable {
    public var impressionIdentifier: String
    public var adNetworkIdentifier: AdNetworkIdentifier
    public var advertisedItemIdentifier: ItemIdentifier
    public var publisherItemIdentifier: ItemIdentifier
    public var sourceIdentifier: Int
    /// Milliseconds since 1970, when the network created the impression.
    public var timestamp: Milliseconds
    public var impressionType: String
    public var eligibleForReengagement: Bool?

    public init(
        impressionIdentifier: String, adNetworkIdentifier: AdNetworkIdentifier,
        advertisedItemIdentifier: ItemIdentifier, publisherItemIdentifier: ItemIdentifier, sourceIdentifier: Int,
        timestamp: Milliseconds, impressionType: String = ImpressionPayload.appImpression,
        eligibleForReengagement: Bool? = nil
    ) {
        self.impressionIdentifier = impressionIdentifier
        self.adNetworkIdentifier = adNetworkIdentifier
        self.advertisedItemIdentifier = advertisedItemIdentifier
        self.publisherItemIdentifier = publisherItemIdentifier
        self.sourceIdentifier = sourceIdentifier
        self.timestamp = timestamp
        self.impressionType = impressionType
        self.eligibleForReengagement = eligibleForReengagement
    }

    public static let appImpression = "app-impression"

    /// Publisher item id 0 marks a development impression (production ones always beat it).
    public var isDevelopment: Bool { publisherItemIdentifier == 0 }

    enum CodingKeys: String, CodingKey {
        case impressionIdentifier = "impression-identifier"
        case adNetworkIdentifier = "ad-network-identifier"
        case advertisedItemIdentifier = "advertised-item-identifier"
        case publisherItemIdentifier = "publisher-item-identifier"
        case sourceIdentifier = "source-identifier"
        case timestamp
        case impressionType = "impression-type"
        case eligibleForReengagement = "eligible-for-re-engagement"
    }
}
