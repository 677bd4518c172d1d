/// The verifier's messages on `verified` in the message codec (see `MessageJSONReader`).
private typealias Reader = MessageJSONReader

extension ImpressionPayload: MessageJSONCoded {
    func write(to w: inout MessageJSONWriter) {
        w.object { w in
            w.field("ad-network-identifier", adNetworkIdentifier.rawValue)
            w.field("advertised-item-identifier", advertisedItemIdentifier)
            w.field("eligible-for-re-engagement", ifPresent: eligibleForReengagement)
            w.field("impression-identifier", impressionIdentifier)
            w.field("impression-type", impressionType)
            w.field("publisher-item-identifier", publisherItemIdentifier)
            w.field("source-identifier", sourceIdentifier)
            w.field("timestamp", timestamp)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var network: AdNetworkIdentifier?
        var advertised: ItemIdentifier?
        var reengagement: Bool?
        var impression: String?
        var type: String?
        var publisher: ItemIdentifier?
        var source: Int?
        var timestamp: Milliseconds?
        try r.object { r, key in
            switch key {
            case "ad-network-identifier": try Reader.once(&network, r.adNetworkIdentifier())
            case "advertised-item-identifier": try Reader.once(&advertised, r.integer())
            case "eligible-for-re-engagement": try Reader.once(&reengagement, r.bool())
            case "impression-identifier": try Reader.once(&impression, r.string())
            case "impression-type": try Reader.once(&type, r.string())
            case "publisher-item-identifier": try Reader.once(&publisher, r.integer())
            case "source-identifier": try Reader.once(&source, r.integer())
            case "timestamp": try Reader.once(&timestamp, r.integer())
            default: throw Reader.Unread()
            }
        }
        guard let network, let advertised, let impression, let type, let publisher, let source, let timestamp else {
            throw Reader.Unread()
        }
        self.init(
            impressionIdentifier: impression, adNetworkIdentifier: network, advertisedItemIdentifier: advertised,
            publisherItemIdentifier: publisher, sourceIdentifier: source, timestamp: timestamp, impressionType: type,
            eligibleForReengagement: reengagement)
    }
}

extension VerifiedImpression: MessageJSONCoded {
    func write(to w: inout MessageJSONWriter) {
        w.object { w in
            w.field("device-identifier", deviceIdentifier)
            w.field("interaction", interaction)
            w.field("kind", kind)
            w.field("payload", payload)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var device: String?
        var interaction: Interaction?
        var kind: ImpressionKind?
        var payload: ImpressionPayload?
        try r.object { r, key in
            switch key {
            case "device-identifier": try Reader.once(&device, r.string())
            case "interaction": try Reader.once(&interaction, Interaction(json: &r))
            case "kind": try Reader.once(&kind, r.value())
            case "payload": try Reader.once(&payload, ImpressionPayload(json: &r))
            default: throw Reader.Unread()
            }
        }
        guard let device, let interaction, let kind, let payload else { throw Reader.Unread() }
        self.init(deviceIdentifier: device, payload: payload, interaction: interaction, kind: kind)
    }
}

extension VerifiedConversion: MessageJSONCoded {
    func write(to w: inout MessageJSONWriter) {
        w.object { w in
            w.field("app", app)
            w.field("report", report)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var app: AdvertisedAppConfiguration?
        var report: ConversionReport?
        try r.object { r, key in
            switch key {
            case "app": try Reader.once(&app, AdvertisedAppConfiguration(json: &r))
            case "report": try Reader.once(&report, ConversionReport(json: &r))
            default: throw Reader.Unread()
            }
        }
        guard let app, let report else { throw Reader.Unread() }
        self.init(report: report, app: app)
    }
}

extension AdvertisedAppConfiguration: MessageJSONCoded {
    /// An app's registration as a conversion carries it; its attribution windows and cooldown, which
    /// few apps set, are left to JSONEncoder and JSONDecoder (their members and checks are their own).
    func write(to w: inout MessageJSONWriter) {
        guard attributionWindows == nil, attributionCooldown == nil else {
            w.failed = true
            return
        }
        w.object { w in
            w.field("AttributionCopyEndpoint", ifPresent: attributionCopyEndpoint)
            w.field("EligibleForAdAttributionKitOverlappingConversions", ifPresent: eligibleForOverlappingConversions)
            w.field("EligibleForAdAttributionKitReengagementPostbackCopies", ifPresent: eligibleForReengagementPostbackCopies)
            w.field("item-identifier", itemIdentifier)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var endpoint: String?
        var overlapping: Bool?
        var copies: Bool?
        var item: ItemIdentifier?
        try r.object { r, key in
            switch key {
            case "AttributionCopyEndpoint": try Reader.once(&endpoint, r.string())
            case "EligibleForAdAttributionKitOverlappingConversions": try Reader.once(&overlapping, r.bool())
            case "EligibleForAdAttributionKitReengagementPostbackCopies": try Reader.once(&copies, r.bool())
            case "item-identifier": try Reader.once(&item, r.integer())
            default: throw Reader.Unread()
            }
        }
        guard let item else { throw Reader.Unread() }
        self.init(
            itemIdentifier: item, attributionCopyEndpoint: endpoint, eligibleForReengagementPostbackCopies: copies,
            eligibleForOverlappingConversions: overlapping)
    }
}

extension MessageJSONReader {
    /// An ad network id as `AdNetworkIdentifier.init(from:)` reads it (lowercase only).
    mutating func adNetworkIdentifier() throws -> AdNetworkIdentifier {
        guard let identifier = AdNetworkIdentifier(try string()) else { throw Unread() }
        return identifier
    }
}
