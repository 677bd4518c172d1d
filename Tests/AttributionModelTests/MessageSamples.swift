import AttributionModel
import Foundation

/// Every message type twice: with every optional member set, and with none; what the published
/// message schemas are held to (MessageSchemaTests).
enum MessageSamples {
    static let network = Fixture.network("example123.adattributionkit")

    static func order(full: Bool) -> PostbackOrder {
        var order = PostbackOrder(
            payload: PostbackPayload(
                adNetworkIdentifier: network, sourceIdentifier: "5239", advertisedItemIdentifier: 1_108_187_390,
                publisherItemIdentifier: full ? 5_838_492 : nil, conversionType: .download,
                marketplaceIdentifier: full ? PostbackPayload.appStoreMarketplace : nil,
                postbackIdentifier: "0b6f3a4e-2c1d-4f5e-8a9b-0c1d2e3f4a5b", postbackSequenceIndex: 0, didWin: true),
            adInteractionType: .click, conversionValue: full ? 42 : nil, coarseConversionValue: full ? .high : nil,
            countryCode: full ? "US" : nil, isDevelopment: false, impressionKind: .adAttributionKit)
        if full { order.isTestPostback = false } else { order.impressionKind = nil }
        return order
    }

    static func impression(full: Bool) -> AttributedImpression {
        AttributedImpression(
            adNetworkIdentifier: network, impressionIdentifier: "9d6f8a2b-1c3e-4f5a-9b7c-2d4e6f8a0b1c", sourceIdentifier: 5239,
            publisherItemIdentifier: 5_838_492, interactionType: full ? .click : .view, kind: .adAttributionKit)
    }

    static func update(full: Bool) -> PostbackUpdate {
        PostbackUpdate(
            fineConversionValue: 42, coarseConversionValue: full ? .medium : nil, lockPostback: full,
            conversionTypes: full ? [.install, .reengagement] : nil, conversionTag: full ? "tag-1" : nil)
    }

    static func activity(full: Bool) -> Activity {
        full ? Activity(sessions: 3, events: ["purchase": 2], revenue: ["USD": Decimal(string: "4.99")!]) : Activity()
    }

    static func bodies(full: Bool) -> [MessageBody] {
        let device = "7d3e5f1a-2b4c-4d6e-8f0a-1b2c3d4e5f6a"
        let app: ItemIdentifier = 1_108_187_390
        var skan = SKANImpression(
            adNetworkIdentifier: network, sourceIdentifier: 5239, itunesItemIdentifier: app,
            nonce: "68483ef6-0678-41b5-a3a3-5a8e6b4b6b64", sourceAppIdentifier: 5_838_492, fidelityType: 1,
            timestamp: 1_700_000_000_000, signature: "MEUCIQ")
        skan.version = SKANImpression.supportedVersion
        // Exactly one of the two impressions: an AdAttributionKit JWS, or (the fuller form) SKAdNetwork's fields.
        let impressionReport =
            full
            ? ImpressionReport(
                deviceIdentifier: device, skadnetworkImpression: skan,
                interaction: .click(at: 1_700_000_001_000, loadedAt: 1_700_000_000_500), receivedAt: 1_700_000_001_200)
            : ImpressionReport(
                deviceIdentifier: device, impression: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln",
                interaction: .oneCallView(at: 1_700_000_001_000),
                receivedAt: 1_700_000_001_200)
        let conversion = ConversionReport(
            deviceIdentifier: device, advertisedItemIdentifier: app, conversionType: full ? .reengagement : .download,
            time: 1_700_000_100_000, countryCode: full ? "US" : nil, receivedAt: 1_700_000_100_100,
            conversionTag: full ? "tag-1" : nil, marketplaceIdentifier: full ? "com.example.store" : nil)
        var valueUpdate = ValueUpdateReport(
            deviceIdentifier: device, advertisedItemIdentifier: app, update: update(full: full), time: 1_700_000_200_000,
            receivedAt: 1_700_000_200_100, skadnetworkShape: full ? true : nil)
        if full { valueUpdate.eventIdentifier = "event-1" }
        var activityReport = ActivityReport(
            deviceIdentifier: device, advertisedItemIdentifier: app, activity: activity(full: full), time: 1_700_000_300_000,
            receivedAt: 1_700_000_300_100, conversionTag: full ? "tag-1" : nil)
        if full { activityReport.eventIdentifier = "event-2" }
        let windows = AttributionWindowsConfiguration(
            global: .init(click: 7, view: 1),
            networks: [network: .init(click: 3, view: nil, ignoreInteractionType: .view)])
        let appConfiguration = AdvertisedAppConfiguration(
            itemIdentifier: app, attributionWindows: full ? windows : nil,
            attributionCooldown: full ? AttributionCooldown(installCooldownHours: 24, reengagementCooldownHours: 48) : nil,
            attributionCopyEndpoint: full ? "https://example.com" : nil, eligibleForReengagementPostbackCopies: full ? true : nil,
            eligibleForOverlappingConversions: full ? false : nil)
        var retry = DeliveryRetry(
            postbackIdentifier: order(full: full).payload.postbackIdentifier, destination: full ? .advertiserCopy : .adNetwork,
            url: "https://example.com/postbacks", body: "{\"jws-string\":\"a.b.c\"}", attempts: 2,
            firstAttemptAt: 1_700_000_400_000, lastError: "HTTP 503", order: order(full: full))
        if full {
            retry.replayed = true
            retry.inFlight = false
        }
        return [
            .impressionReported(impressionReport),
            .conversionReported(conversion),
            .updateReported(valueUpdate),
            .impressionVerified(
                VerifiedImpression(
                    deviceIdentifier: device,
                    payload: ImpressionPayload(
                        impressionIdentifier: "9d6f8a2b-1c3e-4f5a-9b7c-2d4e6f8a0b1c", adNetworkIdentifier: network,
                        advertisedItemIdentifier: app, publisherItemIdentifier: 5_838_492, sourceIdentifier: 5239,
                        timestamp: 1_700_000_000_000, eligibleForReengagement: full ? true : nil),
                    interaction: full
                        ? .view(begin: 1_700_000_000_000, end: 1_700_000_003_000) : .oneCallView(at: 1_700_000_000_000),
                    kind: full ? .skAdNetwork : .adAttributionKit)),
            .conversionVerified(VerifiedConversion(report: conversion, app: appConfiguration)),
            .updateVerified(valueUpdate),
            .rejected(
                Rejection(
                    reason: .invalidSignature, detail: "the signature does not verify", eventIdentifier: "event-3",
                    adNetworkIdentifier: full ? network.description : nil, impressionIdentifier: full ? "impression-1" : nil)),
            .conversionAttributed(
                Attribution(
                    conversionIdentifier: "conversion-1", advertisedItemIdentifier: app, conversionType: .download,
                    conversionTime: 1_700_000_100_000, countryCode: full ? "US" : nil, winner: impression(full: full),
                    nonWinners: full ? [impression(full: false)] : [], conversionTag: full ? "tag-1" : nil,
                    marketplaceIdentifier: full ? "com.example.store" : nil)),
            .updateAttributed(
                AttributedUpdate(
                    conversionIdentifier: "conversion-1", update: update(full: full), time: 1_700_000_200_000,
                    eventIdentifier: full ? "event-1" : nil)),
            .conversionSuperseded(
                ConversionSuperseded(conversionIdentifier: "conversion-1", supersededBy: "conversion-2", time: 1_700_000_500_000)),
            .windowClosed(WindowClosed(conversionIdentifier: "conversion-1", window: full ? 2 : 0, time: 1_700_172_800_000)),
            .postbackDue(order(full: full)),
            .deliveryRetry(retry),
            .activityReported(activityReport),
            .activityVerified(activityReport),
            .activityAttributed(
                AttributedActivity(
                    conversionIdentifier: "conversion-1", activity: activity(full: full), time: 1_700_000_300_000,
                    eventIdentifier: full ? "event-2" : nil)),
            .testPostbacksRequested(
                TestPostbackRequest(
                    adNetworkIdentifier: network, tier: full ? 3 : 0, adInteractionType: .view, conversionType: .redownload,
                    windows: full ? 3 : 1, conversionTag: full ? "tag-1" : nil, conversionValue: full ? 42 : nil,
                    coarseConversionValue: full ? .low : nil, countryCode: full ? "US" : nil, didWin: true,
                    advertisedItemIdentifier: app, publisherItemIdentifier: full ? 5_838_492 : 0, sourceIdentifier: 5239,
                    sourceIdentifierDigits: full ? 4 : nil, postbackIdentifiers: full ? ["p-1", "p-2", "p-3"] : [])),
        ]
    }

    /// Every sample as the envelope JSON a stream carries, one per line.
    static var jsonLines: String {
        get throws {
            try (bodies(full: true) + bodies(full: false)).enumerated().map { index, body in
                String(
                    decoding: try Envelope(id: "message-\(index)", time: 1_700_000_000_000, body: body).encoded(), as: UTF8.self)
            }.joined(separator: "\n")
        }
    }
}
