import Foundation
import Testing

@testable import AttributionModel

/// The message codec (`MessageJSONWriter`, `MessageJSONReader`) against Foundation's: its bytes must be
/// JSONEncoder's for every message type and shape it writes, and whatever it reads, from any bytes, must
/// be exactly what JSONDecoder reads; everything else is left to the general path.
@Suite("the message codec: JSONEncoder's bytes, JSONDecoder's values")
struct MessageJSONTests {
    /// The types the codec writes and reads; the others take the general path by design.
    static let handCoded: Set<MessageType> = [
        .impressionReported, .conversionReported, .updateReported, .impressionVerified, .conversionVerified,
        .updateVerified, .conversionAttributed, .updateAttributed, .conversionSuperseded, .windowClosed, .postbackDue,
    ]

    static var samples: [Envelope] {
        let bodies = MessageSamples.bodies(full: true) + MessageSamples.bodies(full: false) + EnvelopeAndStateTests.everyBody
        return bodies.enumerated().map { Envelope(id: "m-\($0.offset)", time: 1_700_000_000_000, body: $0.element) }
            + (0..<60).map(Self.verified) + (0..<30).map(Self.reported)
    }

    @Test("every message type and shape: JSONEncoder's bytes, read back as the same envelope")
    func sameBytesAsFoundation() throws {
        for envelope in Self.samples {
            let expected = Array(try JSONCoding.encoder.encode(envelope))
            let written = envelope.messageJSON()
            #expect(written == nil || written == expected, "\(envelope.type)\n\(String(decoding: expected, as: UTF8.self))")
            #expect(try envelope.encoded() == expected)
            #expect(try Envelope.decode(expected) == envelope)
            guard Self.handCoded.contains(envelope.type), !Self.needsGeneralPath(envelope) else { continue }
            #expect(written != nil, "\(envelope.type) left to JSONEncoder")
            #expect(Envelope.fromMessageJSON(expected) == envelope, "\(envelope.type) left to JSONDecoder")
        }
    }

    @Test("every member dropped, nulled, retyped or added, a key twice, white space: JSONDecoder's answer or none")
    func neverReadsOtherwiseThanJSONDecoder() throws {
        var read = 0
        var variants = 0
        for envelope in Self.samples where Self.handCoded.contains(envelope.type) {
            let bytes = Array(try JSONCoding.encoder.encode(envelope))
            for variant in try Self.variants(of: bytes) {
                variants += 1
                guard let hand = Envelope.fromMessageJSON(variant) else { continue }
                read += 1
                let foundation = try? JSONCoding.decoder.decode(Envelope.self, from: Data(variant))
                #expect(hand == foundation, "\(String(decoding: variant, as: UTF8.self))")
            }
        }
        // Most variants are refused; the ones read are the reorderings JSONSerialization's output holds.
        #expect(variants > 1_000 && read > 0, "\(variants) variants, \(read) read")
    }

    @Test("text JSONEncoder would escape, and SKAdNetwork impressions, take the general path and come out the same")
    func escapedTextAndSKAdNetworkFallBack() throws {
        for text in ["a\"b", "a\\b", "tab\there", "line\nbreak", "é-device", "\u{1}"] {
            for envelope in [Self.verified(7, device: text), Self.reported(4, device: text)] {
                #expect(envelope.messageJSON() == nil)
                let expected = Array(try JSONCoding.encoder.encode(envelope))
                #expect(try envelope.encoded() == expected)
                #expect(Envelope.fromMessageJSON(expected) == nil)
                #expect(try Envelope.decode(expected) == envelope)
            }
        }
        let skan = ImpressionReport(
            deviceIdentifier: "d",
            skadnetworkImpression: SKANImpression(
                adNetworkIdentifier: AdNetworkIdentifier("example.skadnetwork")!, sourceIdentifier: 1, itunesItemIdentifier: 2,
                nonce: "n", sourceAppIdentifier: 3, fidelityType: 1, timestamp: 4),
            interaction: .click(at: 5, loadedAt: 4), receivedAt: 6)
        let envelope = Envelope(id: "s", time: 5, body: .impressionReported(skan))
        #expect(envelope.messageJSON() == nil)
        #expect(try envelope.encoded() == Array(try JSONCoding.encoder.encode(envelope)))
        #expect(try Envelope.decode(envelope.encoded()) == envelope)
    }

    // MARK: - Samples

    /// A value the codec leaves to the general path on purpose: SKAdNetwork impression reports, an app
    /// configuration with windows or a cooldown, text that needs escaping.
    static func needsGeneralPath(_ envelope: Envelope) -> Bool {
        let special =
            switch envelope.body {
            case .impressionReported(let report): report.skadnetworkImpression != nil
            case .conversionVerified(let conversion):
                conversion.app.attributionWindows != nil || conversion.app.attributionCooldown != nil
            default: false
            }
        let json = (try? JSONCoding.encoder.encode(envelope)) ?? Data()
        return special || json.contains(UInt8(ascii: "\\")) || json.contains { $0 >= 0x7F }
    }

    static func verified(_ index: Int) -> Envelope { verified(index, device: "device-\(index)") }

    static func verified(_ index: Int, device: String) -> Envelope {
        let payload = ImpressionPayload(
            impressionIdentifier: "8C3A1F0E-\(index)", adNetworkIdentifier: AdNetworkIdentifier("example.adattributionkit")!,
            advertisedItemIdentifier: index % 3 == 0 ? UInt64.max : 1_108_187_390, publisherItemIdentifier: UInt64(index % 2),
            sourceIdentifier: index % 10_000, timestamp: index % 5 == 0 ? Int64.min : 1_700_000_000_000 + Int64(index),
            impressionType: index % 4 == 0 ? "web-impression" : ImpressionPayload.appImpression,
            eligibleForReengagement: [nil, true, false][index % 3])
        let impression = VerifiedImpression(
            deviceIdentifier: device, payload: payload, interaction: interaction(index),
            kind: index % 2 == 0 ? .adAttributionKit : .skAdNetwork)
        return Envelope(id: "event-\(index)", time: 1_700_000_000_000 + Int64(index), body: .impressionVerified(impression))
    }

    static func reported(_ index: Int) -> Envelope { reported(index, device: "device-\(index)") }

    static func reported(_ index: Int, device: String) -> Envelope {
        let report = ImpressionReport(
            deviceIdentifier: device, impression: "eyJhbGciOiJFUzI1NiJ9.eyJ4IjoxfQ.c2ln-\(index)_x",
            interaction: interaction(index), receivedAt: index % 4 == 0 ? Int64.max : 1_700_000_000_900 + Int64(index))
        return Envelope(id: "event-\(index)", time: 1_700_000_000_000 + Int64(index), body: .impressionReported(report))
    }

    static func interaction(_ index: Int) -> Interaction {
        switch index % 3 {
        case 0: .click(at: 1_700_000_000_500, loadedAt: 1_700_000_000_000)
        case 1: .view(begin: 1_700_000_000_000, end: 1_700_000_003_000)
        default: Interaction(type: .click, time: index % 2 == 0 ? Int64.min : -5)
        }
    }

    // MARK: - Variants

    /// The message with one change each: in every object (the envelope, its body and everything in it),
    /// every member removed, set to null, to a value of another type or twice, and one member added;
    /// and the original with white space and with a key repeated at the top.
    static func variants(of bytes: [UInt8]) throws -> [[UInt8]] {
        let root = try JSONSerialization.jsonObject(with: Data(bytes))
        var variants: [Any] = []
        func visit(_ value: Any, _ rebuild: @escaping (Any) -> Any) {
            if let object = value as? [String: Any] {
                variants.append(rebuild(object.merging(["zz-unknown": 1]) { $1 }))
                for (key, member) in object {
                    var without = object
                    without[key] = nil
                    variants.append(rebuild(without))
                    for replacement in [NSNull(), "x", 7, -1, 1.5, true, [Any](), [String: Any]()] as [Any] {
                        variants.append(rebuild(object.merging([key: replacement]) { $1 }))
                    }
                    visit(member) { rebuild(object.merging([key: $0]) { $1 }) }
                }
            } else if let array = value as? [Any] {
                for (index, element) in array.enumerated() {
                    visit(element) { replaced in
                        var copy = array
                        copy[index] = replaced
                        return rebuild(copy)
                    }
                }
            }
        }
        visit(root) { $0 }
        let text = String(decoding: bytes, as: UTF8.self)
        return try variants.map {
            Array(try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys, .withoutEscapingSlashes]))
        } + [
            Array(("{\"id\":\"again\"," + text.dropFirst()).utf8), Array((" " + text).utf8),
            Array(text.replacingOccurrences(of: ":", with: ": ").utf8), Array(text.dropLast().utf8), Array((text + "x").utf8),
        ]
    }
}
