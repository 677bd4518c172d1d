/// An ad network's request for test postbacks, the server-side counterpart of Apple's "Creating
/// postbacks in developer settings": the tier, interaction, conversion type, windows, tag, values and
/// country it chose, and the postback identifiers ingest gave them. It travels `events` → `verified` →
/// `attributions` like any event, and the scheduler turns it into postbacks due now; nothing of it
/// enters a crowd, a cap or a device's state.
public struct TestPostbackRequest: Sendable, Codable, Hashable {
    public var adNetworkIdentifier: AdNetworkIdentifier
    /// 0–3 (checked by `validate`; `CrowdTier` itself clamps).
    public var tier: Int
    public var adInteractionType: InteractionType
    public var conversionType: ConversionType
    /// 1 (the first window's postback) or 3 (one per window).
    public var windows: Int
    /// Re-engagements only; postbacks do not carry it (Apple's do not either), so it is checked and echoed.
    public var conversionTag: String?
    public var conversionValue: Int?
    public var coarseConversionValue: CoarseConversionValue?
    public var countryCode: String?
    public var didWin: Bool
    public var advertisedItemIdentifier: ItemIdentifier
    public var publisherItemIdentifier: ItemIdentifier
    public var sourceIdentifier: Int
    /// How many digits of `sourceIdentifier` a tier 2 or 3 postback keeps (2–4); tiers 0 and 1 keep 2.
    public var sourceIdentifierDigits: Int?
    /// One per window asked for, set by ingest (a body's own are replaced).
    public var postbackIdentifiers: [String]

    public init(
        adNetworkIdentifier: AdNetworkIdentifier, tier: Int, adInteractionType: InteractionType = .click,
        conversionType: ConversionType = .download, windows: Int = 1, conversionTag: String? = nil,
        conversionValue: Int? = nil, coarseConversionValue: CoarseConversionValue? = nil, countryCode: String? = nil,
        didWin: Bool = true, advertisedItemIdentifier: ItemIdentifier, publisherItemIdentifier: ItemIdentifier = 0,
        sourceIdentifier: Int = 1234, sourceIdentifierDigits: Int? = nil, postbackIdentifiers: [String] = []
    ) {
        self.adNetworkIdentifier = adNetworkIdentifier
        self.tier = tier
        self.adInteractionType = adInteractionType
        self.conversionType = conversionType
        self.windows = windows
        self.conversionTag = conversionTag
        self.conversionValue = conversionValue
        self.coarseConversionValue = coarseConversionValue
        self.countryCode = countryCode
        self.didWin = didWin
        self.advertisedItemIdentifier = advertisedItemIdentifier
        self.publisherItemIdentifier = publisherItemIdentifier
        self.sourceIdentifier = sourceIdentifier
        self.sourceIdentifierDigits = sourceIdentifierDigits
        self.postbackIdentifiers = postbackIdentifiers
    }

    enum CodingKeys: String, CodingKey {
        case adNetworkIdentifier = "ad-network-identifier"
        case tier
        case adInteractionType = "ad-interaction-type"
        case conversionType = "conversion-type"
        case windows
        case conversionTag = "conversion-tag"
        case conversionValue = "conversion-value"
        case coarseConversionValue = "coarse-conversion-value"
        case countryCode = "country-code"
        case didWin = "did-win"
        case advertisedItemIdentifier = "advertised-item-identifier"
        case publisherItemIdentifier = "publisher-item-identifier"
        case sourceIdentifier = "source-identifier"
        case sourceIdentifierDigits = "source-identifier-digits"
        case postbackIdentifiers = "postback-identifiers"
    }

    /// The body of `POST /v1/ad-networks/{id}/test-postbacks`: the path names the network; everything
    /// but `tier` and `advertised-item-identifier` has a default.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        adNetworkIdentifier = try c.decodeIfPresent(AdNetworkIdentifier.self, forKey: .adNetworkIdentifier) ?? Self.unnamed
        tier = try c.decode(Int.self, forKey: .tier)
        adInteractionType = try c.decodeIfPresent(InteractionType.self, forKey: .adInteractionType) ?? .click
        conversionType = try c.decodeIfPresent(ConversionType.self, forKey: .conversionType) ?? .download
        windows = try c.decodeIfPresent(Int.self, forKey: .windows) ?? 1
        conversionTag = try c.decodeIfPresent(String.self, forKey: .conversionTag)
        conversionValue = try c.decodeIfPresent(Int.self, forKey: .conversionValue)
        coarseConversionValue = try c.decodeIfPresent(CoarseConversionValue.self, forKey: .coarseConversionValue)
        countryCode = try c.decodeIfPresent(String.self, forKey: .countryCode)
        didWin = try c.decodeIfPresent(Bool.self, forKey: .didWin) ?? true
        advertisedItemIdentifier = try c.decode(ItemIdentifier.self, forKey: .advertisedItemIdentifier)
        publisherItemIdentifier = try c.decodeIfPresent(ItemIdentifier.self, forKey: .publisherItemIdentifier) ?? 0
        sourceIdentifier = try c.decodeIfPresent(Int.self, forKey: .sourceIdentifier) ?? 1234
        sourceIdentifierDigits = try c.decodeIfPresent(Int.self, forKey: .sourceIdentifierDigits)
        postbackIdentifiers = try c.decodeIfPresent([String].self, forKey: .postbackIdentifiers) ?? []
    }

    /// A body's network before ingest sets the one its path names.
    public static let unnamed = AdNetworkIdentifier("unnamed")!

    /// The choices Apple's developer settings offer, in the ranges real postbacks have.
    public func validate() throws(RequestProblem) {
        guard (0...3).contains(tier) else { throw RequestProblem(.valueOutOfRange, "tier must be 0, 1, 2 or 3") }
        guard windows == 1 || windows == ConversionWindows.count else {
            throw RequestProblem(.valueOutOfRange, "windows must be 1 (the first postback) or 3 (one per conversion window)")
        }
        if let value = conversionValue, !PostbackUpdate.fineRange.contains(value) {
            throw RequestProblem(.valueOutOfRange, "conversion-value must be within 0–63")
        }
        guard SourceIdentifier.range.contains(sourceIdentifier) else {
            throw RequestProblem(.valueOutOfRange, "source-identifier must be within 0–9999 (at most 4 digits)")
        }
        if let digits = sourceIdentifierDigits {
            guard (2...4).contains(digits) else {
                throw RequestProblem(.valueOutOfRange, "source-identifier-digits must be 2, 3 or 4")
            }
            guard digits == 2 || tier >= 2 else {
                throw RequestProblem(.valueOutOfRange, "tiers 0 and 1 keep 2 digits of the source identifier")
            }
        }
        guard advertisedItemIdentifier > 0 else {
            throw RequestProblem(.invalidItemIdentifier, "advertised-item-identifier must be an App Store item id (not 0)")
        }
        if let countryCode, !CountryCode.isValid(countryCode) {
            throw RequestProblem(
                .invalidCountryCode, "country-code must be an ISO 3166-1 alpha-2 code in capitals, such as US or DE")
        }
        if let tag = conversionTag {
            try RequestChecks.conversionTag(tag)
            guard conversionType == .reengagement else {
                throw RequestProblem(
                    .conversionTagNotSupported,
                    "conversion-tag names a re-engagement, but conversion-type is \(conversionType.rawValue)")
            }
        }
    }
}

/// The postbacks a test request makes: built by `PostbackPlan`'s own field gating for the tier asked for
/// (so a tier-0 request for three windows makes one postback, and a non-winning one only the first
/// window's), each signed with the test key (`SigningRole.testPostback`).
public enum TestPostbacks {
    /// How many postbacks `request` makes, for ingest to name them before the scheduler builds them.
    public static func count(_ request: TestPostbackRequest) -> Int {
        var numbered = request
        numbered.postbackIdentifiers = (0..<ConversionWindows.count).map(String.init)
        return orders(numbered).count
    }

    /// The postbacks, in window order; window `i`'s takes `postbackIdentifiers[i]` (requests naming too
    /// few make fewer).
    public static func orders(_ request: TestPostbackRequest) -> [PostbackOrder] {
        let impression = AttributedImpression(
            adNetworkIdentifier: request.adNetworkIdentifier, impressionIdentifier: "test-postback",
            sourceIdentifier: request.sourceIdentifier, publisherItemIdentifier: request.publisherItemIdentifier,
            interactionType: request.adInteractionType, kind: .adAttributionKit)
        // A non-winning postback is one of an attribution's non-winners; the winner beside it sends nothing.
        let attribution = Attribution(
            conversionIdentifier: "test-postback", advertisedItemIdentifier: request.advertisedItemIdentifier,
            conversionType: request.conversionType, conversionTime: 0, countryCode: request.countryCode,
            winner: impression, nonWinners: request.didWin ? [] : [impression], conversionTag: request.conversionTag)
        let tier = CrowdTier(rawValue: request.tier)
        let crowd = CrowdAssessment(
            tier: tier, sourceIdentifierDigits: tier >= .two ? request.sourceIdentifierDigits ?? 4 : 2,
            countryIsTierThree: tier == .three)
        var plan = PostbackPlan(attribution: attribution, crowd: crowd)
        plan.crowd = crowd  // a development winner would otherwise get the highest tier
        let contender = request.didWin ? 0 : 1
        let values = PostbackFieldGating.Values(fine: request.conversionValue, coarse: request.coarseConversionValue)
        return (0..<min(request.windows, request.postbackIdentifiers.count)).compactMap { window in
            guard window == 0 || request.didWin,
                var order = plan.order(
                    window: window, contender: contender, values: values, identifier: request.postbackIdentifiers[window])
            else { return nil }
            order.isDevelopment = true
            order.isTestPostback = true
            return order
        }
    }
}
