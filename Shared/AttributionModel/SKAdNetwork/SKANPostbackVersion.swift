/// The keys of a SKAdNetwork postback, spelled as Apple sends them.
public enum SKANPostbackField: String, Sendable, Hashable, CaseIterable, CodingKey {
    case version
    case adNetworkIdentifier = "ad-network-id"
    case campaignIdentifier = "campaign-id"
    case sourceIdentifier = "source-identifier"
    case appIdentifier = "app-id"
    case transactionIdentifier = "transaction-id"
    case redownload
    case sourceAppIdentifier = "source-app-id"
    case sourceDomain = "source-domain"
    case fidelityType = "fidelity-type"
    case didWin = "did-win"
    case postbackSequenceIndex = "postback-sequence-index"
    case conversionValue = "conversion-value"
    case coarseConversionValue = "coarse-conversion-value"
    case countryCode = "country-code"
    case attributionSignature = "attribution-signature"

    /// The fields some version signs; the others (values, country, the signature) are never signed.
    public static let signable: [SKANPostbackField] = [
        .version, .adNetworkIdentifier, .campaignIdentifier, .sourceIdentifier, .appIdentifier, .transactionIdentifier,
        .redownload, .sourceAppIdentifier, .sourceDomain, .fidelityType, .didWin, .postbackSequenceIndex,
    ]
}

/// One position in a version's signed message: a field that must be present, or one signed only when
/// the postback carries it (`source-app-id` and `source-domain` depend on the crowd tier).
public struct SKANSignedComponent: Sendable, Hashable {
    public var field: SKANPostbackField
    public var isOptional: Bool

    public static func required(_ field: SKANPostbackField) -> Self { Self(field: field, isOptional: false) }
    public static func ifPresent(_ field: SKANPostbackField) -> Self { Self(field: field, isOptional: true) }
}

/// The SKAdNetwork postback versions and what each signs, as Apple documents them in "Verifying an
/// install-validation postback" (4.0), "Combining parameters for SKAdNetwork 3 postbacks" (3.0) and
/// "Combining parameters for previous SKAdNetwork postback versions" (2.2, 2.1, 2.0, 1.0).
public enum SKANPostbackVersion: String, Sendable, Codable, Hashable, CaseIterable {
    /// 1.0: the original postback has no `version` key.
    case v1 = "1.0"
    case v2 = "2.0"
    /// 2.1: the first version Apple signs with P-256.
    case v21 = "2.1"
    /// 2.2: adds `fidelity-type`.
    case v22 = "2.2"
    /// 3.0: adds `did-win` (non-winning postbacks).
    case v3 = "3.0"
    /// 4.0: `source-identifier` replaces `campaign-id`; three postbacks (`postback-sequence-index`).
    case v4 = "4.0"

    /// The fields the signature covers, in signing order.
    public var signedComponents: [SKANSignedComponent] {
        switch self {
        case .v1:
            return [
                .required(.adNetworkIdentifier), .required(.campaignIdentifier), .required(.appIdentifier),
                .required(.transactionIdentifier),
            ]
        case .v2, .v21:
            return Self.campaignHead + [.ifPresent(.sourceAppIdentifier)]
        case .v22:
            return Self.campaignHead + [.ifPresent(.sourceAppIdentifier), .required(.fidelityType)]
        case .v3:
            return Self.campaignHead + [.ifPresent(.sourceAppIdentifier), .required(.fidelityType), .required(.didWin)]
        case .v4:
            // Web ads sign source-domain where app ads sign source-app-id; never both.
            return [
                .required(.version), .required(.adNetworkIdentifier), .required(.sourceIdentifier),
                .required(.appIdentifier), .required(.transactionIdentifier), .required(.redownload),
                .ifPresent(.sourceAppIdentifier), .ifPresent(.sourceDomain), .required(.fidelityType),
                .required(.didWin), .required(.postbackSequenceIndex),
            ]
        }
    }

    /// Apple's key for 1.0 and 2.0 postbacks is P-192; from 2.1 on it is P-256.
    public var curve: SKANCurve {
        switch self {
        case .v1, .v2: return .p192
        case .v21, .v22, .v3, .v4: return .p256
        }
    }

    /// The head every version from 2.0 to 3.0 shares.
    private static let campaignHead: [SKANSignedComponent] = [
        .required(.version), .required(.adNetworkIdentifier), .required(.campaignIdentifier), .required(.appIdentifier),
        .required(.transactionIdentifier), .required(.redownload),
    ]
}
