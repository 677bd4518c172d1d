/// Which attribution system an impression comes from: both compete in one pool.
public enum ImpressionKind: String, Sendable, Codable, Hashable {
    case adAttributionKit = "aak"
    case skAdNetwork = "skan"
}

/// An impression whose signature and rules the verifier checked: what attribution-winner stores.
public struct VerifiedImpression: Sendable, Codable, Hashable {
    public var deviceIdentifier: String
    public var payload: ImpressionPayload
    public var interaction: Interaction
    public var kind: ImpressionKind

    public init(deviceIdentifier: String, payload: ImpressionPayload, interaction: Interaction, kind: ImpressionKind) {
        self.deviceIdentifier = deviceIdentifier
        self.payload = payload
        self.interaction = interaction
        self.kind = kind
    }

    enum CodingKeys: String, CodingKey {
        case deviceIdentifier = "device-identifier"
        case payload, interaction, kind
    }
}

/// A conversion with the advertised app's configuration as registered when it was verified, so that
/// attribution-winner decides from the message alone.
public struct VerifiedConversion: Sendable, Codable, Hashable {
    public var report: ConversionReport
    public var app: AdvertisedAppConfiguration

    public init(report: ConversionReport, app: AdvertisedAppConfiguration) {
        self.report = report
        self.app = app
    }
}

/// Why the verifier refused an event. Carries no device identifier: it is meant to be shown to the
/// ad network that asks why its input was refused.
public struct Rejection: Sendable, Codable, Hashable {
    public var reason: RejectionReason
    public var detail: String
    /// The `events` message id that was refused.
    public var eventIdentifier: String
    public var adNetworkIdentifier: String?
    public var impressionIdentifier: String?

    public init(
        reason: RejectionReason, detail: String, eventIdentifier: String, adNetworkIdentifier: String? = nil,
        impressionIdentifier: String? = nil
    ) {
        self.reason = reason
        self.detail = detail
        self.eventIdentifier = eventIdentifier
        self.adNetworkIdentifier = adNetworkIdentifier
        self.impressionIdentifier = impressionIdentifier
    }

    enum CodingKeys: String, CodingKey {
        case reason, detail
        case eventIdentifier = "event-identifier"
        case adNetworkIdentifier = "ad-network-identifier"
        case impressionIdentifier = "impression-identifier"
    }
}

/// Stable, machine-readable reason codes (mirroring Apple's error vocabulary where it has one).
public enum RejectionReason: String, Sendable, Codable, Hashable, CaseIterable {
    case invalidHeader = "invalid-header"
    case invalidPayload = "invalid-payload"
    case invalidSignature = "invalid-signature"
    case invalidComponents = "invalid-components"
    case unsupportedAlgorithm = "unsupported-algorithm"
    case keyIdentifierMismatch = "key-identifier-mismatch"
    case unknownAdNetwork = "unknown-ad-network"
    case unknownAdvertisedApp = "unknown-advertised-app"
    case publisherNotListingNetwork = "publisher-not-listing-network"
    case impressionExpired = "impression-expired"
    case impressionFromFuture = "impression-from-future"
    case impressionReplayed = "impression-replayed"
    case clickTooLate = "click-too-late"
    case viewTooShort = "view-too-short"
    case overlappingView = "overlapping-view"
    // attribution-winner's refusals of a verified conversion (ConversionEligibility.Refusal).
    case noEligibleImpression = "no-eligible-impression"
    case notInstalled = "not-installed"
    case cooldown
    case reengagementAppCap = "re-engagement-app-cap"
    case reengagementDeviceCap = "re-engagement-device-cap"

    public init(_ refusal: ConversionEligibility.Refusal) {
        switch refusal {
        case .noEligibleImpression: self = .noEligibleImpression
        case .notInstalled: self = .notInstalled
        case .cooldown: self = .cooldown
        case .appReengagementCap: self = .reengagementAppCap
        case .deviceReengagementCap: self = .reengagementDeviceCap
        }
    }
}
