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

/// The reason a `Rejection` carries: one of the pipeline's reason codes (`ProblemReason`, the one
/// enum ingest's problem JSON uses too). The name stays for the stages that refuse events.
public typealias RejectionReason = ProblemReason
