import Foundation

/// Request bodies of ingest's HTTP API with their exact key spellings: ingest decodes them, the
/// `attribution` tool (and any Swift client) encodes them. Their checks are beside them
/// (`IngestRequests+*Validation.swift`): ingest's routes decode, validate and answer.
public enum IngestRequests {
    /// `PUT /v1/admin/ad-networks/{id}`. Registering a different key for a known network rotates it: the
    /// previous key stays valid for `previous-key-grace-seconds` (default: the operator's setting).
    public struct AdNetwork: Codable, Sendable {
        public var publicKey: String
        public var postbackURL: String
        public var skanPublicKey: String?
        public var previousKeyGraceSeconds: Int?

        public init(publicKey: String, postbackURL: String, skanPublicKey: String? = nil, previousKeyGraceSeconds: Int? = nil) {
            self.publicKey = publicKey
            self.postbackURL = postbackURL
            self.skanPublicKey = skanPublicKey
            self.previousKeyGraceSeconds = previousKeyGraceSeconds
        }

        enum CodingKeys: String, CodingKey {
            case publicKey = "public-key"
            case postbackURL = "postback-url"
            case skanPublicKey = "skan-public-key"
            case previousKeyGraceSeconds = "previous-key-grace-seconds"
        }
    }

    /// `PUT /v1/admin/publisher-apps/{item}`: the app's `AdNetworkIdentifiers` (see `validate()`).
    public struct PublisherApp: Codable, Sendable {
        public var adNetworkIdentifiers: [String]

        public init(adNetworkIdentifiers: [String]) { self.adNetworkIdentifiers = adNetworkIdentifiers }

        enum CodingKeys: String, CodingKey { case adNetworkIdentifiers = "AdNetworkIdentifiers" }
    }

    /// `PUT /v1/admin/advertised-apps/{item}`: the app's `AdAttributionKitConfigurations` keys, flat or
    /// nested in an `AdAttributionKitConfigurations` dictionary as in Info.plist; `{}` means Apple's defaults.
    public struct AdvertisedApp: Codable, Sendable {
        public var attributionWindows: AttributionWindowsConfiguration?
        public var attributionCooldown: AttributionCooldown?
        public var attributionCopyEndpoint: String?
        public var eligibleForReengagementPostbackCopies: Bool?
        public var eligibleForOverlappingConversions: Bool?

        public init(
            attributionWindows: AttributionWindowsConfiguration? = nil, attributionCooldown: AttributionCooldown? = nil,
            attributionCopyEndpoint: String? = nil, eligibleForReengagementPostbackCopies: Bool? = nil,
            eligibleForOverlappingConversions: Bool? = nil
        ) {
            self.attributionWindows = attributionWindows
            self.attributionCooldown = attributionCooldown
            self.attributionCopyEndpoint = attributionCopyEndpoint
            self.eligibleForReengagementPostbackCopies = eligibleForReengagementPostbackCopies
            self.eligibleForOverlappingConversions = eligibleForOverlappingConversions
        }

        public func configuration(itemIdentifier: ItemIdentifier) -> AdvertisedAppConfiguration {
            AdvertisedAppConfiguration(
                itemIdentifier: itemIdentifier, attributionWindows: attributionWindows,
                attributionCooldown: attributionCooldown, attributionCopyEndpoint: attributionCopyEndpoint,
                eligibleForReengagementPostbackCopies: eligibleForReengagementPostbackCopies,
                eligibleForOverlappingConversions: eligibleForOverlappingConversions)
        }

        /// Keys Apple keeps inside `AdAttributionKitConfigurations`; the others sit at the top of Info.plist.
        public static let nestedContainer = "AdAttributionKitConfigurations"

        enum CodingKeys: String, CodingKey, CaseIterable {
            case attributionWindows = "AttributionWindows"
            case attributionCooldown = "AttributionCooldown"
            case attributionCopyEndpoint = "AttributionCopyEndpoint"
            case eligibleForReengagementPostbackCopies = "EligibleForAdAttributionKitReengagementPostbackCopies"
            case eligibleForOverlappingConversions = "EligibleForAdAttributionKitOverlappingConversions"
        }

        /// The keys this body understands, for refusing unknown ones by name.
        public static let knownKeys: Set<String> = Set(CodingKeys.allCases.map(\.rawValue))
    }

    /// `POST /v1/impressions`: `impression` (AdAttributionKit compact JWS) or `skadnetwork-impression`
    /// (SKAdNetwork 4.0 fields with their `signature`), exactly one.
    public struct Impression: Codable, Sendable {
        public var deviceIdentifier: String
        public var impression: String?
        public var skadnetworkImpression: SKANImpression?
        public var interaction: Interaction

        public init(deviceIdentifier: String, impression: String, interaction: Interaction) {
            self.deviceIdentifier = deviceIdentifier
            self.impression = impression
            self.interaction = interaction
        }

        public init(deviceIdentifier: String, skadnetworkImpression: SKANImpression, interaction: Interaction) {
            self.deviceIdentifier = deviceIdentifier
            self.skadnetworkImpression = skadnetworkImpression
            self.interaction = interaction
        }

        enum CodingKeys: String, CodingKey {
            case deviceIdentifier = "device-identifier"
            case impression
            case skadnetworkImpression = "skadnetwork-impression"
            case interaction
        }
    }

    /// `POST /v1/conversions`
    public struct Conversion: Codable, Sendable {
        public var deviceIdentifier: String
        public var advertisedItemIdentifier: ItemIdentifier
        public var conversionType: ConversionType
        public var time: Milliseconds
        public var countryCode: String?
        /// The store the app was installed from: an alternative marketplace's bundle id; absent, the App
        /// Store (`com.apple.AppStore`).
        public var marketplaceIdentifier: String?
        /// Re-engagements: the URL the ad opens the app with (its universal link); the answer gives it
        /// back with `AdAttributionKitReengagementOpen` appended (`ReengagementOpenURL`).
        public var reengagementURL: String?

        public init(
            deviceIdentifier: String, advertisedItemIdentifier: ItemIdentifier, conversionType: ConversionType,
            time: Milliseconds, countryCode: String? = nil, marketplaceIdentifier: String? = nil,
            reengagementURL: String? = nil
        ) {
            self.reengagementURL = reengagementURL
            self.deviceIdentifier = deviceIdentifier
            self.advertisedItemIdentifier = advertisedItemIdentifier
            self.conversionType = conversionType
            self.time = time
            self.countryCode = countryCode
            self.marketplaceIdentifier = marketplaceIdentifier
        }

        enum CodingKeys: String, CodingKey {
            case deviceIdentifier = "device-identifier"
            case advertisedItemIdentifier = "advertised-item-identifier"
            case conversionType = "conversion-type"
            case time
            case countryCode = "country-code"
            case marketplaceIdentifier = "marketplace-identifier"
            case reengagementURL = "reengagement-url"
        }
    }

    /// `POST /v1/conversion-value-updates`: flat, with `PostbackUpdate`'s own key names beside the
    /// device, app and time, as an SDK passes them through, or with the arguments of SKAdNetwork's
    /// `updatePostbackConversionValue(_:coarseValue:lockWindow:)` (`PostbackUpdate.Shape`).
    public struct ValueUpdate: Codable, Sendable {
        public var deviceIdentifier: String
        public var advertisedItemIdentifier: ItemIdentifier
        public var time: Milliseconds
        public var update: PostbackUpdate
        public var shape: PostbackUpdate.Shape

        public init(
            deviceIdentifier: String, advertisedItemIdentifier: ItemIdentifier, time: Milliseconds, update: PostbackUpdate,
            shape: PostbackUpdate.Shape = .adAttributionKit
        ) {
            self.deviceIdentifier = deviceIdentifier
            self.advertisedItemIdentifier = advertisedItemIdentifier
            self.time = time
            self.update = update
            self.shape = shape
        }

        enum CodingKeys: String, CodingKey {
            case deviceIdentifier = "device-identifier"
            case advertisedItemIdentifier = "advertised-item-identifier"
            case time
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            deviceIdentifier = try c.decode(String.self, forKey: .deviceIdentifier)
            advertisedItemIdentifier = try c.decode(ItemIdentifier.self, forKey: .advertisedItemIdentifier)
            time = try c.decode(Milliseconds.self, forKey: .time)
            (update, shape) = try PostbackUpdate.decode(from: decoder)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(deviceIdentifier, forKey: .deviceIdentifier)
            try c.encode(advertisedItemIdentifier, forKey: .advertisedItemIdentifier)
            try c.encode(time, forKey: .time)
            switch shape {
            case .adAttributionKit: try update.encode(to: encoder)
            case .skadnetwork: try update.encodeInSKAdNetworkShape(to: encoder)
            }
        }
    }
}

extension IngestRequests {
    /// `POST /v1/activity`: what the app saw on a device since its last report.
    public struct ActivityReportRequest: Codable, Sendable {
        public var deviceIdentifier: String
        public var advertisedItemIdentifier: ItemIdentifier
        public var time: Milliseconds
        public var sessions: Int?
        public var events: [String: Int]?
        public var revenue: [String: Decimal]?
        public var conversionTag: String?

        public init(
            deviceIdentifier: String, advertisedItemIdentifier: ItemIdentifier, time: Milliseconds, sessions: Int? = nil,
            events: [String: Int]? = nil, revenue: [String: Decimal]? = nil, conversionTag: String? = nil
        ) {
            self.deviceIdentifier = deviceIdentifier
            self.advertisedItemIdentifier = advertisedItemIdentifier
            self.time = time
            self.sessions = sessions
            self.events = events
            self.revenue = revenue
            self.conversionTag = conversionTag
        }

        public var activity: Activity { Activity(sessions: sessions, events: events, revenue: revenue) }

        enum CodingKeys: String, CodingKey {
            case deviceIdentifier = "device-identifier"
            case advertisedItemIdentifier = "advertised-item-identifier"
            case time, sessions, events, revenue
            case conversionTag
        }

        /// The members read: `CodingKeys`, and `conversion-tag`, read as `conversionTag` (see
        /// `ConversionTag`) and never written.
        enum DecodingKeys: String, CodingKey {
            case deviceIdentifier = "device-identifier"
            case advertisedItemIdentifier = "advertised-item-identifier"
            case time, sessions, events, revenue
            case conversionTag
            case conversionTagAsAnswered = "conversion-tag"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: DecodingKeys.self)
            deviceIdentifier = try c.decode(String.self, forKey: .deviceIdentifier)
            advertisedItemIdentifier = try c.decode(ItemIdentifier.self, forKey: .advertisedItemIdentifier)
            time = try c.decode(Milliseconds.self, forKey: .time)
            sessions = try c.decodeIfPresent(Int.self, forKey: .sessions)
            events = try c.decodeIfPresent([String: Int].self, forKey: .events)
            revenue = try c.decodeIfPresent([String: Decimal].self, forKey: .revenue)
            // `conversionTag`, as an update's (the documented name), or `conversion-tag`.
            conversionTag = try ConversionTag.decode(from: c, .conversionTag, or: .conversionTagAsAnswered)
        }
    }

    /// `POST /v1/conversion-values/evaluate`: the value the app would report next for these totals.
    public struct EvaluationRequest: Codable, Sendable {
        public var advertisedItemIdentifier: ItemIdentifier
        public var window: Int
        public var sessions: Int?
        public var events: [String: Int]?
        public var revenue: [String: Decimal]?
        /// The value last reported in this window, if any (for never-lower and locks).
        public var previous: SchemaValue?
        /// A schema version; the current one if absent.
        public var version: Int?

        public var totals: ActivityTotals {
            ActivityTotals(sessions: sessions ?? 0, events: events ?? [:], revenue: revenue ?? [:])
        }

        enum CodingKeys: String, CodingKey {
            case advertisedItemIdentifier = "advertised-item-identifier"
            case window, sessions, events, revenue, previous, version
        }
    }
}
