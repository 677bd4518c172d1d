/// The signed JWS payload of an AdAttributionKit postback, with the spec's key spellings.
public struct PostbackPayload: Sendable, Codable, Hashable {
    public var impressionType: String
    public var adNetworkIdentifier: AdNetworkIdentifier
    /// A string of 2–4 digits: the least-significant digits the crowd tier allows.
    public var sourceIdentifier: String
    public var advertisedItemIdentifier: ItemIdentifier
    /// Tier 3 winning first postbacks only.
    public var publisherItemIdentifier: ItemIdentifier?
    public var conversionType: ConversionType
    /// Omitted at tier 0.
    public var marketplaceIdentifier: String?
    public var postbackIdentifier: String
    public var postbackSequenceIndex: Int
    public var didWin: Bool

    public init(
        impressionType: String = ImpressionPayload.appImpression, adNetworkIdentifier: AdNetworkIdentifier,
        sourceIdentifier: String, advertisedItemIdentifier: ItemIdentifier, publisherItemIdentifier: ItemIdentifier?,
        conversionType: ConversionType, marketplaceIdentifier: String?, postbackIdentifier: String,
        postbackSequenceIndex: Int, didWin: Bool
    ) {
        self.impressionType = impressionType
        self.adNetworkIdentifier = adNetworkIdentifier
        self.sourceIdentifier = sourceIdentifier
        self.advertisedItemIdentifier = advertisedItemIdentifier
        self.publisherItemIdentifier = publisherItemIdentifier
        self.conversionType = conversionType
        self.marketplaceIdentifier = marketplaceIdentifier
        self.postbackIdentifier = postbackIdentifier
        self.postbackSequenceIndex = postbackSequenceIndex
        self.didWin = didWin
    }

    public static let appStoreMarketplace = "com.apple.AppStore"

    enum CodingKeys: String, CodingKey {
        case impressionType = "impression-type"
        case adNetworkIdentifier = "ad-network-identifier"
        case sourceIdentifier = "source-identifier"
        case advertisedItemIdentifier = "advertised-item-identifier"
        case publisherItemIdentifier = "publisher-item-identifier"
        case conversionType = "conversion-type"
        case marketplaceIdentifier = "marketplace-identifier"
        case postbackIdentifier = "postback-identifier"
        case postbackSequenceIndex = "postback-sequence-index"
        case didWin = "did-win"
    }
}

/// A postback ready to sign and send: the scheduler releases it to the dispatcher when its delay ends.
/// The value fields travel outside the JWS (unsigned), as Apple sends them.
public struct PostbackOrder: Sendable, Codable, Hashable {
    public var payload: PostbackPayload
    public var adInteractionType: InteractionType
    public var conversionValue: Int?
    public var coarseConversionValue: CoarseConversionValue?
    public var countryCode: String?
    /// Signed with the development key id when the winning impression was a development one.
    public var isDevelopment: Bool
    /// An ad network's test postback (`POST /v1/ad-networks/{id}/test-postbacks`): signed with the test
    /// key id, as Apple signs postbacks made in developer settings with a key of their own. Nil (absent
    /// in the message) for an attribution's postbacks.
    public var isTestPostback: Bool?
    /// The kind of the impression this postback credits: a SKAdNetwork impression gets a SKAdNetwork 4.0
    /// postback, an AdAttributionKit one (or nil, in orders held before this field existed) a JWS one.
    public var impressionKind: ImpressionKind?

    public init(
        payload: PostbackPayload, adInteractionType: InteractionType, conversionValue: Int?,
        coarseConversionValue: CoarseConversionValue?, countryCode: String?, isDevelopment: Bool,
        impressionKind: ImpressionKind = .adAttributionKit
    ) {
        self.payload = payload
        self.adInteractionType = adInteractionType
        self.conversionValue = conversionValue
        self.coarseConversionValue = coarseConversionValue
        self.countryCode = countryCode
        self.isDevelopment = isDevelopment
        self.impressionKind = impressionKind
    }

    enum CodingKeys: String, CodingKey {
        case payload
        case adInteractionType = "ad-interaction-type"
        case conversionValue = "conversion-value"
        case coarseConversionValue = "coarse-conversion-value"
        case countryCode = "country-code"
        case isDevelopment = "development"
        case isTestPostback = "test-postback"
        case impressionKind = "impression-kind"
    }

    /// Which of the dispatcher's keys signs this postback.
    public var signingRole: SigningRole {
        if isTestPostback == true { return .testPostback }
        return isDevelopment ? .development : .production
    }
}

/// The dispatcher's three signing keys, each with a `kid` of its own, as Apple keeps three:
/// production (`apple-cas-identifier/0`), postbacks of development impressions
/// (`apple-development-identifier/0`) and postbacks made in developer settings
/// (`apple-development-identifier/1`), so that a receiver tells them apart by `kid` alone.
public enum SigningRole: String, Sendable, Hashable, CaseIterable {
    case production
    case development
    case testPostback = "test-postback"
}

/// The HTTP body POSTed to a postback destination.
public struct PostbackBody: Sendable, Codable, Hashable {
    public var jwsString: String
    public var adInteractionType: InteractionType
    public var conversionValue: Int?
    public var coarseConversionValue: CoarseConversionValue?
    public var countryCode: String?

    public init(order: PostbackOrder, jwsString: String) {
        self.jwsString = jwsString
        self.adInteractionType = order.adInteractionType
        self.conversionValue = order.conversionValue
        self.coarseConversionValue = order.coarseConversionValue
        self.countryCode = order.countryCode
    }

    enum CodingKeys: String, CodingKey {
        case jwsString = "jws-string"
        case adInteractionType = "ad-interaction-type"
        case conversionValue = "conversion-value"
        case coarseConversionValue = "coarse-conversion-value"
        case countryCode = "country-code"
    }
}

/// Where one copy of a postback goes; each destination is delivered and retried on its own.
public enum PostbackDestination: String, Sendable, Codable, Hashable {
    /// The ad network's registered postback URL (winning and non-winning postbacks).
    case adNetwork = "ad-network"
    /// The advertised app's `AttributionCopyEndpoint` (winning postbacks only).
    case advertiserCopy = "advertiser-copy"
}

/// One delivery of a postback to one destination, as it waits in the dispatcher's retry queue or sits
/// in the dead-letter stream: the exact bytes are resent.
public struct DeliveryRetry: Sendable, Codable, Hashable {
    public var postbackIdentifier: String
    public var destination: PostbackDestination
    public var url: String
    public var body: String
    /// Attempts made so far (1 after the first failure).
    public var attempts: Int
    public var firstAttemptAt: Milliseconds
    public var lastError: String
    /// The unsigned order, so a replayed dead letter can be signed again with the current key, and a
    /// retry goes to its destination's URL as registered now.
    public var order: PostbackOrder
    /// Set when an operator replays a dead letter: a fresh series of attempts.
    public var replayed: Bool?
    /// Set on the record the dispatcher keeps while an attempt is under way past its batch (a slow
    /// destination): the attempt's outcome replaces it. Released (the dispatcher stopped before the
    /// outcome was recorded), it counts as a failed attempt.
    public var inFlight: Bool?

    public init(
        postbackIdentifier: String, destination: PostbackDestination = .adNetwork, url: String, body: String, attempts: Int,
        firstAttemptAt: Milliseconds, lastError: String, order: PostbackOrder
    ) {
        self.postbackIdentifier = postbackIdentifier
        self.destination = destination
        self.url = url
        self.body = body
        self.attempts = attempts
        self.firstAttemptAt = firstAttemptAt
        self.lastError = lastError
        self.order = order
    }

    /// Unique per postback and destination: the retry queue's item id.
    public var deliveryIdentifier: String { "\(postbackIdentifier):\(destination.rawValue)" }

    enum CodingKeys: String, CodingKey {
        case postbackIdentifier = "postback-identifier"
        case destination, url, body, attempts, order, replayed
        case inFlight = "in-flight"
        case firstAttemptAt = "first-attempt-at"
        case lastError = "last-error"
    }
}
