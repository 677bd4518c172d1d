/// A SKAdNetwork install-validation postback (versions 1.0 to 4.0), as the device POSTs it to the ad
/// network [Identifying the parameters in install-validation postbacks]. Only the fields its version
/// lists in `SKANPostbackVersion.signedComponents` are signed; the value fields never are.
public struct SKANPostback: Codable, Sendable, Hashable {
    /// Absent in 1.0 postbacks.
    public var version: String?
    /// Kept as sent, not as `AdNetworkIdentifier`: a receiver checks Apple's signature over the exact
    /// text, whatever our own id rules say.
    public var adNetworkIdentifier: String
    /// Versions 1.0–3.0.
    public var campaignIdentifier: Int?
    /// Version 4.0: 2–4 digits of the impression's source identifier, as a string.
    public var sourceIdentifier: String?
    /// The advertised app.
    public var appIdentifier: ItemIdentifier
    /// Unique per postback: receivers deduplicate on it.
    public var transactionIdentifier: String
    /// 2.0 and later.
    public var redownload: Bool?
    /// 2.0 and later, crowd-tier gated; never in non-winning postbacks.
    public var sourceAppIdentifier: ItemIdentifier?
    /// 4.0 web ads, instead of `source-app-id`.
    public var sourceDomain: String?
    /// 2.2 and later: 1 = StoreKit-rendered (click), 0 = view-through (view).
    public var fidelityType: Int?
    /// 3.0 and later.
    public var didWin: Bool?
    /// 4.0: 0, 1 or 2, one per conversion window.
    public var postbackSequenceIndex: Int?
    /// 0–63; not signed.
    public var conversionValue: Int?
    /// 4.0; not signed. A postback carries the fine or the coarse value, never both.
    public var coarseConversionValue: CoarseConversionValue?
    /// Not signed.
    public var countryCode: String?
    /// DER ECDSA signature, base64 (standard alphabet).
    public var attributionSignature: String

    public init(
        version: SKANPostbackVersion, adNetworkIdentifier: String, campaignIdentifier: Int? = nil,
        sourceIdentifier: String? = nil, appIdentifier: ItemIdentifier, transactionIdentifier: String,
        redownload: Bool? = nil, sourceAppIdentifier: ItemIdentifier? = nil, sourceDomain: String? = nil,
        fidelityType: Int? = nil, didWin: Bool? = nil, postbackSequenceIndex: Int? = nil, conversionValue: Int? = nil,
        coarseConversionValue: CoarseConversionValue? = nil, countryCode: String? = nil, attributionSignature: String = ""
    ) {
        // 1.0 postbacks carry no version key.
        self.version = version == .v1 ? nil : version.rawValue
        self.adNetworkIdentifier = adNetworkIdentifier
        self.campaignIdentifier = campaignIdentifier
        self.sourceIdentifier = sourceIdentifier
        self.appIdentifier = appIdentifier
        self.transactionIdentifier = transactionIdentifier
        self.redownload = redownload
        self.sourceAppIdentifier = sourceAppIdentifier
        self.sourceDomain = sourceDomain
        self.fidelityType = fidelityType
        self.didWin = didWin
        self.postbackSequenceIndex = postbackSequenceIndex
        self.conversionValue = conversionValue
        self.coarseConversionValue = coarseConversionValue
        self.countryCode = countryCode
        self.attributionSignature = attributionSignature
    }

    /// The version that decides the signed fields and the key: a postback without `version` is 1.0.
    /// Nil for a version Apple never published.
    public var resolvedVersion: SKANPostbackVersion? {
        guard let version else { return .v1 }
        return SKANPostbackVersion(rawValue: version)
    }

    /// Fidelity 1 is a click and 0 a view; postbacks before 2.2 carry no fidelity and were all StoreKit-rendered.
    public var interactionType: InteractionType { (fidelityType ?? 1) == 1 ? .click : .view }

    /// The field as the signature spells it (integers in decimal, booleans as `true`/`false`), or nil when absent.
    public func signedText(of field: SKANPostbackField) -> String? {
        switch field {
        case .version: return version
        case .adNetworkIdentifier: return adNetworkIdentifier
        case .campaignIdentifier: return campaignIdentifier.map { String($0) }
        case .sourceIdentifier: return sourceIdentifier
        case .appIdentifier: return String(appIdentifier)
        case .transactionIdentifier: return transactionIdentifier
        case .redownload: return redownload.map(SKANSignedMessage.text)
        case .sourceAppIdentifier: return sourceAppIdentifier.map { String($0) }
        case .sourceDomain: return sourceDomain
        case .fidelityType: return fidelityType.map { String($0) }
        case .didWin: return didWin.map(SKANSignedMessage.text)
        case .postbackSequenceIndex: return postbackSequenceIndex.map { String($0) }
        case .conversionValue: return conversionValue.map { String($0) }
        case .coarseConversionValue: return coarseConversionValue?.rawValue
        case .countryCode: return countryCode
        case .attributionSignature: return attributionSignature
        }
    }

    typealias CodingKeys = SKANPostbackField
}
