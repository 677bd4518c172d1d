import AttributionModel
import Foundation
import Testing

@Suite("Impression rules")
struct ImpressionRulesTests {
    static let now: Milliseconds = 1_719_599_957_239

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        var timestamp: Milliseconds = now
        var interaction: Interaction = .click(at: now, loadedAt: now)
        var source = 5239
        var type = ImpressionPayload.appImpression
        let reason: RejectionReason?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "valid click", reason: nil),
        Case(name: "timestamp in 2100", timestamp: PlausibleTime.range.upperBound + 1, reason: .invalidPayload),
        Case(name: "click 15 minutes after load", interaction: .click(at: now + 900_000, loadedAt: now), reason: nil),
        Case(
            name: "click 15 minutes and 1 ms after load", interaction: .click(at: now + 900_001, loadedAt: now),
            reason: .clickTooLate),
        Case(name: "click before load", interaction: .click(at: now - 1, loadedAt: now), reason: .clickTooLate),
        Case(name: "view of 2 s", interaction: .view(begin: now - 2_000, end: now), reason: nil),
        Case(name: "view of 1.999 s", interaction: .view(begin: now - 1_999, end: now), reason: .viewTooShort),
        // Apple's handleView() records a view in one call and documents no minimum time on screen.
        Case(name: "one-call view", interaction: .oneCallView(at: now), reason: nil),
        Case(name: "one-call view at -2^63", interaction: .oneCallView(at: .min), reason: .invalidPayload),
        Case(name: "source id 10000", source: 10_000, reason: .invalidPayload),
        Case(name: "source id -1", source: -1, reason: .invalidPayload),
        Case(name: "wrong impression type", type: "web-impression", reason: .invalidPayload),
        Case(name: "5 minutes in the future", timestamp: now + 300_000, interaction: .click(at: now, loadedAt: now), reason: nil),
        Case(
            name: "5 minutes and 1 ms in the future", timestamp: now + 300_001, interaction: .click(at: now, loadedAt: now),
            reason: .impressionFromFuture),
        Case(name: "30 days old", timestamp: now - 30 * Fixture.day, interaction: .click(at: now, loadedAt: now), reason: nil),
        Case(
            name: "30 days and 1 ms old", timestamp: now - 30 * Fixture.day - 1, interaction: .click(at: now, loadedAt: now),
            reason: .impressionExpired),
        // Times at the 64-bit limits are refused; they used to trap the verifier (integer overflow).
        Case(name: "click loaded at -2^63", interaction: .click(at: now, loadedAt: .min), reason: .invalidPayload),
        Case(name: "click at -2^63", interaction: .click(at: .min, loadedAt: now), reason: .invalidPayload),
        Case(name: "click at 2^63-1 loaded at -1", interaction: .click(at: .max, loadedAt: -1), reason: .invalidPayload),
        Case(name: "view from 2^63-1 to -2^63", interaction: .view(begin: .max, end: .min), reason: .invalidPayload),
        Case(name: "timestamp -2^63", timestamp: .min, reason: .invalidPayload),
    ]

    @Test(arguments: cases)
    func checks(_ c: Case) {
        let payload = ImpressionPayload(
            impressionIdentifier: "544B8FAD-0AD5-4434-98B2-327113AF84DB",
            adNetworkIdentifier: Fixture.network("example.adattributionkit"),
            advertisedItemIdentifier: 1, publisherItemIdentifier: 2, sourceIdentifier: c.source, timestamp: c.timestamp,
            impressionType: c.type)
        #expect(
            ImpressionRules.check(payload, interaction: c.interaction, receivedAt: Self.now, policy: .realTime)?.0 == c.reason)
    }

    @Test func specExamplePayloadDecodes() throws {
        let json =
            #"{"advertised-item-identifier":1108187390,"ad-network-identifier":"example.adattributionkit","impression-type":"app-impression","eligible-for-re-engagement":true,"timestamp":1719599957239,"publisher-item-identifier":5838492,"impression-identifier":"544B8FAD-0AD5-4434-98B2-327113AF84DB","source-identifier":5239}"#
        let payload = try JSONCoding.decoder.decode(ImpressionPayload.self, from: Data(json.utf8))
        #expect(payload.sourceIdentifier == 5239)
        #expect(payload.eligibleForReengagement == true)
        #expect(payload.adNetworkIdentifier.rawValue == "example.adattributionkit")
        #expect(!payload.isDevelopment)
    }

    @Test func upperCaseNetworkIdsAreRefused() {
        #expect(AdNetworkIdentifier("Example.net") == nil)
        #expect(AdNetworkIdentifier("abc123.skadnetwork") != nil)
        #expect(AdNetworkIdentifier("") == nil)
    }
}
