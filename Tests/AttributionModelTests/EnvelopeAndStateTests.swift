import AttributionModel
import Foundation
import Testing

@Suite("Envelope and device state")
struct EnvelopeAndStateTests {
    typealias F = Fixture

    /// One message of every body type (the compact coding tests use them too).
    static var everyBody: [MessageBody] {
        let order = PostbackOrder(
            payload: PostbackPayload(
                adNetworkIdentifier: F.network("a.net"), sourceIdentifier: "39", advertisedItemIdentifier: 1,
                publisherItemIdentifier: nil, conversionType: .reengagement, marketplaceIdentifier: nil, postbackIdentifier: "p",
                postbackSequenceIndex: 1, didWin: true),
            adInteractionType: .click, conversionValue: nil, coarseConversionValue: .low, countryCode: nil, isDevelopment: false)
        let bodies: [MessageBody] = [
            .impressionReported(
                ImpressionReport(
                    deviceIdentifier: "d", impression: "a.b.c", interaction: .click(at: 1, loadedAt: 0), receivedAt: 2)),
            .conversionReported(
                ConversionReport(
                    deviceIdentifier: "d", advertisedItemIdentifier: 1, conversionType: .redownload, time: 3, receivedAt: 4)),
            .updateReported(
                ValueUpdateReport(
                    deviceIdentifier: "d", advertisedItemIdentifier: 1, update: .init(fineConversionValue: 3, lockPostback: true),
                    time: 5, receivedAt: 6)),
            .impressionVerified(F.impression("i", at: 7)),
            .conversionVerified(
                VerifiedConversion(
                    report: ConversionReport(
                        deviceIdentifier: "d", advertisedItemIdentifier: 1, conversionType: .download, time: 3, receivedAt: 4),
                    app: .init(
                        itemIdentifier: 1,
                        attributionWindows: .init(
                            global: .init(click: 3), networks: [F.network("a.net"): .init(view: 2, ignoreInteractionType: .click)]
                        )))),
            .rejected(Rejection(reason: .invalidSignature, detail: "x", eventIdentifier: "e")),
            .conversionAttributed(F.attribution()),
            .updateAttributed(AttributedUpdate(conversionIdentifier: "c", update: .init(fineConversionValue: 1), time: 9)),
            .windowClosed(WindowClosed(conversionIdentifier: "c", window: 2, time: 10)),
            .postbackDue(order),
            .deliveryRetry(
                DeliveryRetry(
                    postbackIdentifier: "p", url: "https://x", body: "{}", attempts: 2, firstAttemptAt: 1, lastError: "HTTP 500",
                    order: order)),
        ]
        return bodies
    }

    @Test func envelopeRoundTripsEveryBody() throws {
        for body in Self.everyBody {
            let envelope = Envelope(time: 42, body: body)
            let decoded = try Envelope.decode(envelope.encoded())
            #expect(decoded == envelope)
            // Every message is one JSON object on every stream; the compact form 0.1.0 wrote is still read.
            #expect(try Envelope.decode(CompactCoding.encodeByCodable(envelope)) == envelope, "\(body.type)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(envelope.encoded())) as? [String: Any])
            #expect(json["type"] as? String == body.type.rawValue)
            #expect(Set(json.keys) == ["type", "id", "time", "schema", "body"])
        }
    }

    @Test func postbackPayloadUsesTheSpecKeys() throws {
        let payload = PostbackPayload(
            adNetworkIdentifier: F.network("a.net"), sourceIdentifier: "5239", advertisedItemIdentifier: 1_108_187_390,
            publisherItemIdentifier: 5_838_492, conversionType: .reengagement, marketplaceIdentifier: "com.apple.AppStore",
            postbackIdentifier: "p", postbackSequenceIndex: 0, didWin: true)
        let json = try #require(try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(payload)) as? [String: Any])
        #expect(
            Set(json.keys) == [
                "impression-type", "ad-network-identifier", "source-identifier", "advertised-item-identifier",
                "publisher-item-identifier",
                "conversion-type", "marketplace-identifier", "postback-identifier", "postback-sequence-index", "did-win",
            ])
        #expect(json["source-identifier"] as? String == "5239")
        #expect(json["conversion-type"] as? String == "re-engagement")
        #expect(ConversionType(spelling: "reengagement") == .reengagement)
    }

    @Test func updateBeforeItsConversionIsKeptThenApplied() throws {
        var state = DeviceAttributionState()
        state.record(F.impression("i", at: 1_000))
        let early = ValueUpdateReport(
            deviceIdentifier: "d", advertisedItemIdentifier: F.app, update: .init(fineConversionValue: 9, lockPostback: true),
            time: 3_000, receivedAt: 3_000)
        let routed = state.receive(early)
        #expect(routed == nil)
        #expect(state.pendingUpdates.count == 1)
        let conversion = VerifiedConversion(
            report: ConversionReport(
                deviceIdentifier: "d", advertisedItemIdentifier: F.app, conversionType: .download, time: 2_000, receivedAt: 2_000),
            app: .init(itemIdentifier: F.app))
        let first = try state.attribute(conversion, conversionIdentifier: "c", policy: .realTime).get()
        #expect(first.attribution.winner.impressionIdentifier == "i")
        #expect(first.updates.map(\.conversionIdentifier) == ["c"])
        #expect(state.pendingUpdates.isEmpty)
        // The winning impression cannot win again.
        let second = state.attribute(conversion, conversionIdentifier: "c2", policy: .realTime)
        #expect(second == .failure(.noEligibleImpression))
    }

    /// An update for a conversion that is still settling waits for it rather than going to an older
    /// conversion; if the settling conversion is refused, the update goes to the older one after all.
    @Test(arguments: [true, false]) func updateWaitsForASettlingConversion(attributed: Bool) throws {
        var state = DeviceAttributionState()
        state.record(F.impression("install-click", at: 1_000))
        func conversion(_ type: ConversionType, at time: Milliseconds) -> VerifiedConversion {
            VerifiedConversion(
                report: ConversionReport(
                    deviceIdentifier: "d", advertisedItemIdentifier: F.app, conversionType: type, time: time, receivedAt: time),
                app: .init(itemIdentifier: F.app))
        }
        _ = try state.attribute(conversion(.download, at: 2_000), conversionIdentifier: "install", policy: .realTime).get()
        if attributed { state.record(F.impression("second-click", at: 3_000)) }
        state.settle(conversion(.redownload, at: 4_000).report, conversionIdentifier: "again")
        let update = ValueUpdateReport(
            deviceIdentifier: "d", advertisedItemIdentifier: F.app, update: .init(fineConversionValue: 9), time: 5_000,
            receivedAt: 5_000)
        #expect(state.receive(update) == nil)
        let result = state.attribute(conversion(.redownload, at: 4_000), conversionIdentifier: "again", policy: .realTime)
        #expect(state.settling.isEmpty)
        if attributed {
            #expect(try result.get().updates.map(\.conversionIdentifier) == ["again"])
        } else {
            #expect(result == .failure(.noEligibleImpression))
            #expect(state.routePending().map(\.conversionIdentifier) == ["install"])
        }
        #expect(state.pendingUpdates.isEmpty)
    }

    /// States written before `settling` existed still decode (a reset state would lose impressions).
    @Test func stateWithoutSettlingDecodes() throws {
        let json = #"{"impressions":[],"conversions":[],"pendingUpdates":[],"installedAt":5}"#
        let state = try JSONCoding.decoder.decode(DeviceAttributionState.self, from: Data(json.utf8))
        #expect(state.installedAt == 5 && state.settling.isEmpty)
    }

    @Test func keepsAtMost15ViewsPerPublisher() {
        var state = DeviceAttributionState()
        for n in 0..<20 { state.record(F.impression("v\(n)", type: .view, at: Milliseconds(n) * 10_000)) }
        state.record(F.impression("v0-again", type: .view, at: 1, publisher: 99))
        state.record(F.impression("v19", type: .view, at: 999))  // duplicate id: ignored
        let kept = state.impressions.map(\.payload.impressionIdentifier)
        #expect(kept.count == 16)
        #expect(!kept.contains("v4") && kept.contains("v5") && kept.contains("v0-again"))
    }
}
