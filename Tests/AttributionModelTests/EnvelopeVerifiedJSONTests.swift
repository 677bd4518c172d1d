import AttributionModel
import Foundation
import Testing

/// `Envelope.encoded()` writes `impression.verified` envelopes without JSONEncoder: the bytes must be
/// exactly JSONEncoder's, for every shape of the message (optional fields present or not, both
/// interaction and impression kinds, extreme numbers), and text that needs escaping must still come
/// out right (it takes JSONEncoder's path).
@Suite("impression.verified envelopes: the direct writer's bytes are JSONEncoder's")
struct EnvelopeVerifiedJSONTests {
    static func envelope(_ index: Int, device: String = "device-1", impressionID: String? = nil) -> Envelope {
        let payload = ImpressionPayload(
            impressionIdentifier: impressionID ?? "8C3A1F0E-\(index)",
            adNetworkIdentifier: AdNetworkIdentifier("example.adattributionkit")!,
            advertisedItemIdentifier: index % 3 == 0 ? UInt64.max : 1_108_187_390, publisherItemIdentifier: UInt64(index % 2),
            sourceIdentifier: index % 10_000, timestamp: index % 5 == 0 ? Int64.min : 1_700_000_000_000 + Int64(index),
            impressionType: index % 4 == 0 ? "web-impression" : ImpressionPayload.appImpression,
            eligibleForReengagement: [nil, true, false][index % 3])
        let interaction =
            switch index % 3 {
            case 0: Interaction.click(at: 1_700_000_000_500, loadedAt: 1_700_000_000_000)
            case 1: Interaction.view(begin: 1_700_000_000_000, end: 1_700_000_003_000)
            default: Interaction(type: .click, time: -5)
            }
        return Envelope(
            id: "event-\(index)", time: 1_700_000_000_000 + Int64(index),
            body: .impressionVerified(
                VerifiedImpression(
                    deviceIdentifier: device, payload: payload, interaction: interaction,
                    kind: index % 2 == 0 ? .adAttributionKit : .skAdNetwork)))
    }

    static func jsonEncoder(_ envelope: Envelope) throws -> [UInt8] { Array(try JSONCoding.encoder.encode(envelope)) }

    @Test("60 shapes: identical bytes, and they decode to the same envelope")
    func sameBytesAsJSONEncoder() throws {
        for index in 0..<60 {
            let envelope = Self.envelope(index)
            guard case .impressionVerified(let impression) = envelope.body else { continue }
            // The direct path is taken (not the fallback) and writes JSONEncoder's bytes.
            #expect(try Envelope.verifiedImpressionJSON(envelope, impression) == Self.jsonEncoder(envelope), "shape \(index)")
            #expect(try envelope.encoded() == Self.jsonEncoder(envelope), "shape \(index)")
            #expect(try Envelope.decode(envelope.encoded()) == envelope)
            #expect(try Envelope.decode(envelope.encoded()) == envelope)
        }
    }

    @Test("text JSON would escape (quotes, backslashes, control characters, non-ASCII) comes out as JSONEncoder writes it")
    func escapedTextFallsBack() throws {
        for device in ["a\"b", "a\\b", "a/b", "tab\there", "line\nbreak", "é-device", "\u{1}"] {
            let envelope = Self.envelope(7, device: device, impressionID: device)
            guard case .impressionVerified(let impression) = envelope.body else { continue }
            #expect(device == "a/b" || Envelope.verifiedImpressionJSON(envelope, impression) == nil)
            #expect(try envelope.encoded() == Self.jsonEncoder(envelope), "\(device)")
            #expect(try Envelope.decode(envelope.encoded()) == envelope)
            #expect(try Envelope.decode(envelope.encoded()) == envelope)
        }
    }

    static func reported(_ index: Int, device: String = "device-1", jws: String? = nil) -> Envelope {
        let interaction =
            switch index % 3 {
            case 0: Interaction.click(at: 1_700_000_000_500, loadedAt: 1_700_000_000_000)
            case 1: Interaction.view(begin: 1_700_000_000_000, end: 1_700_000_003_000)
            default: Interaction(type: .click, time: index % 2 == 0 ? Int64.min : -5)
            }
        let report = ImpressionReport(
            deviceIdentifier: device, impression: jws ?? "eyJhbGciOiJFUzI1NiJ9.eyJ4IjoxfQ.c2ln-\(index)_x",
            interaction: interaction, receivedAt: index % 4 == 0 ? Int64.max : 1_700_000_000_900 + Int64(index))
        return Envelope(id: "event-\(index)", time: 1_700_000_000_000 + Int64(index), body: .impressionReported(report))
    }

    @Test("impression.reported (ingest): identical bytes over 30 shapes, escaping text and SKAdNetwork reports fall back")
    func reportedImpressionsToo() throws {
        for index in 0..<30 {
            let envelope = Self.reported(index)
            guard case .impressionReported(let report) = envelope.body else { continue }
            #expect(try Envelope.reportedImpressionJSON(envelope, report) == Self.jsonEncoder(envelope), "shape \(index)")
            #expect(try Envelope.decode(envelope.encoded()) == envelope)
            #expect(try Envelope.decode(envelope.encoded()) == envelope)
        }
        for text in ["a\"b", "a\\b", "tab\there", "é", "\u{1}"] {
            for envelope in [Self.reported(4, device: text), Self.reported(5, jws: text)] {
                guard case .impressionReported(let report) = envelope.body else { continue }
                #expect(Envelope.reportedImpressionJSON(envelope, report) == nil)
                #expect(try envelope.encoded() == Self.jsonEncoder(envelope))
            }
        }
        let skan = ImpressionReport(
            deviceIdentifier: "d",
            skadnetworkImpression: SKANImpression(
                adNetworkIdentifier: AdNetworkIdentifier("example.skadnetwork")!, sourceIdentifier: 1, itunesItemIdentifier: 2,
                nonce: "n", sourceAppIdentifier: 3, fidelityType: 1, timestamp: 4),
            interaction: .click(at: 5, loadedAt: 4), receivedAt: 6)
        let skanEnvelope = Envelope(id: "s", time: 5, body: .impressionReported(skan))
        #expect(Envelope.reportedImpressionJSON(skanEnvelope, skan) == nil)
        #expect(try skanEnvelope.encoded() == Self.jsonEncoder(skanEnvelope))
    }
}
