/// An ad network as the admin API registered it. `publicKey` is the ES256 key as a JWK JSON object
/// string (PEM input is converted on registration), so every reader parses one form.
public struct AdNetworkRegistration: Sendable, Codable, Hashable {
    public var adNetworkIdentifier: AdNetworkIdentifier
    public var publicKey: String
    public var postbackURL: String

    public init(adNetworkIdentifier: AdNetworkIdentifier, publicKey: String, postbackURL: String) {
        self.adNetworkIdentifier = adNetworkIdentifier
        self.publicKey = publicKey
        self.postbackURL = postbackURL
    }

    enum CodingKeys: String, CodingKey {
        case adNetworkIdentifier = "ad-network-identifier"
        case publicKey = "public-key"
        case postbackURL = "postback-url"
    }
}

/// An app that shows ads: only impressions from networks it lists are eligible.
public struct PublisherAppConfiguration: Sendable, Codable, Hashable {
    public var itemIdentifier: ItemIdentifier
    /// `AdNetworkIdentifiers`, lowercase.
    public var adNetworkIdentifiers: [AdNetworkIdentifier]

    public init(itemIdentifier: ItemIdentifier, adNetworkIdentifiers: [AdNetworkIdentifier]) {
        self.itemIdentifier = itemIdentifier
        self.adNetworkIdentifiers = adNetworkIdentifiers
    }

    enum CodingKeys: String, CodingKey {
        case itemIdentifier = "item-identifier"
        case adNetworkIdentifiers = "AdNetworkIdentifiers"
    }
}

/// An app that is advertised: its attribution rules, with the spec's (Info.plist) key names.
public struct AdvertisedAppConfiguration: Sendable, Codable, Hashable {
    public var itemIdentifier: ItemIdentifier
    public var attributionWindows: AttributionWindowsConfiguration?
    public var attributionCooldown: AttributionCooldown?
    public var attributionCopyEndpoint: String?

    public init(
        itemIdentifier: ItemIdentifier, attributionWindows: AttributionWindowsConfiguration? = nil,
        attributionCooldown: AttributionCooldown? = nil, attributionCopyEndpoint: String? = nil
    ) {
        self.itemIdentifier = itemIdentifier
        self.attributionWindows = attributionWindows
        self.attributionCooldown = attributionCooldown
        self.attributionCopyEndpoint = attributionCopyEndpoint
    }

    enum CodingKeys: String, CodingKey {
        case itemIdentifier = "item-identifier"
        case attributionWindows = "AttributionWindows"
        case attributionCooldown = "AttributionCooldown"
        case attributionCopyEndpoint = "AttributionCopyEndpoint"
    }
}
