/// An ad network as the admin API registered it. `publicKey` is the ES256 key as a JWK JSON object
/// string (PEM input is converted on registration), so every reader parses one form.
public struct AdNetworkRegistration: Sendable, Codable, Hashable {
    public var adNetworkIdentifier: AdNetworkIdentifier
    public var publicKey: String
    public var postbackURL: String
    /// The key replaced by the last rotation, still accepted until `previousKeyValidUntil`.
    public var previousPublicKey: String?
    public var previousKeyValidUntil: Milliseconds?
    /// The network's SKAdNetwork public key (base64 SPKI or PEM), for SKAN 4.0 impressions.
    public var skanPublicKey: String?

    public init(
        adNetworkIdentifier: AdNetworkIdentifier, publicKey: String, postbackURL: String, previousPublicKey: String? = nil,
        previousKeyValidUntil: Milliseconds? = nil, skanPublicKey: String? = nil
    ) {
        self.adNetworkIdentifier = adNetworkIdentifier
        self.publicKey = publicKey
        self.postbackURL = postbackURL
        self.previousPublicKey = previousPublicKey
        self.previousKeyValidUntil = previousKeyValidUntil
        self.skanPublicKey = skanPublicKey
    }

    /// The keys an impression signed at `now` may verify with: the current one, and the previous one
    /// during its grace period after a rotation.
    public func acceptedKeys(at now: Milliseconds) -> [String] {
        guard let previousPublicKey, let previousKeyValidUntil, now < previousKeyValidUntil else { return [publicKey] }
        return [publicKey, previousPublicKey]
    }

    /// Registers `newKey`; when it differs from the current key, the current one stays valid for `grace`.
    public func rotated(to newKey: String, postbackURL: String, skanPublicKey: String?, at now: Milliseconds, grace: Milliseconds)
        -> AdNetworkRegistration
    {
        var next = self
        next.postbackURL = postbackURL
        next.skanPublicKey = skanPublicKey ?? self.skanPublicKey
        if newKey != publicKey {
            next.previousPublicKey = publicKey
            next.previousKeyValidUntil = now + grace
            next.publicKey = newKey
        }
        return next
    }

    enum CodingKeys: String, CodingKey {
        case adNetworkIdentifier = "ad-network-identifier"
        case publicKey = "public-key"
        case postbackURL = "postback-url"
        case previousPublicKey = "previous-public-key"
        case previousKeyValidUntil = "previous-key-valid-until"
        case skanPublicKey = "skan-public-key"
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
    /// Copies of re-engagement postbacks go to `AttributionCopyEndpoint` only with this opt-in.
    public var eligibleForReengagementPostbackCopies: Bool?
    /// Several re-engagement conversions may be open at once only with this opt-in.
    public var eligibleForOverlappingConversions: Bool?

    public init(
        itemIdentifier: ItemIdentifier, attributionWindows: AttributionWindowsConfiguration? = nil,
        attributionCooldown: AttributionCooldown? = nil, attributionCopyEndpoint: String? = nil,
        eligibleForReengagementPostbackCopies: Bool? = nil, eligibleForOverlappingConversions: Bool? = nil
    ) {
        self.itemIdentifier = itemIdentifier
        self.attributionWindows = attributionWindows
        self.attributionCooldown = attributionCooldown
        self.attributionCopyEndpoint = attributionCopyEndpoint
        self.eligibleForReengagementPostbackCopies = eligibleForReengagementPostbackCopies
        self.eligibleForOverlappingConversions = eligibleForOverlappingConversions
    }

    enum CodingKeys: String, CodingKey {
        case itemIdentifier = "item-identifier"
        case attributionWindows = "AttributionWindows"
        case attributionCooldown = "AttributionCooldown"
        case attributionCopyEndpoint = "AttributionCopyEndpoint"
        case eligibleForReengagementPostbackCopies = "EligibleForAdAttributionKitReengagementPostbackCopies"
        case eligibleForOverlappingConversions = "EligibleForAdAttributionKitOverlappingConversions"
    }
}
