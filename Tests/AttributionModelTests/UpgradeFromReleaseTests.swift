import AttributionModel
import Foundation
import Testing

/// Release 0.1.0 wrote its stream messages in binary forms (the compact envelope, `CompactCoding`
/// layout 2, and held postbacks released as `CompactHeldPostback`); this release writes JSON and must
/// still read what 0.1.0 left on the streams, so that a rolling upgrade loses nothing.
///
/// `Fixtures/stream-entries-0.1.0.txt` holds every message type in both forms, full and bare (the
/// samples of `MessageSamples`), as the compact encoder wrote them: its layout and the model's types are
/// 0.1.0's (`git diff v0.1.0 -- Shared/AttributionModel` changes comments only, but for the later
/// optional `test-postback` member, which these entries leave out, as 0.1.0 did).
struct UpgradeFromReleaseTests {
    /// The fixture's entries: the type named on each line and the bytes, in file order.
    static func entries() throws -> [(type: String, bytes: [UInt8])] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/stream-entries-0.1.0.txt")
        return try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map { line in
            let parts = line.split(separator: " ")
            let hex = Array(parts[1].utf8)
            let bytes = stride(from: 0, to: hex.count, by: 2).map {
                UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)!
            }
            return (String(parts[0]), bytes)
        }
    }

    /// What each fixture line holds: the samples as 0.1.0 knew them, with a held postback after each
    /// `postback.due`.
    static func expected() -> [(type: String, envelope: Envelope)] {
        var expected: [(String, Envelope)] = []
        for (index, var body) in (MessageSamples.bodies(full: true) + MessageSamples.bodies(full: false)).enumerated() {
            if case .postbackDue(var order) = body {
                order.isTestPostback = nil
                body = .postbackDue(order)
            }
            if case .deliveryRetry(var retry) = body {
                retry.order.isTestPostback = nil
                body = .deliveryRetry(retry)
            }
            let envelope = Envelope(id: "message-\(index)", time: 1_700_000_000_000, body: body)
            expected.append((envelope.type.rawValue, envelope))
            if case .postbackDue(var order) = body {
                // The held form has no "unknown" impression kind: an order without one is read as AdAttributionKit's.
                order.impressionKind = order.impressionKind ?? .adAttributionKit
                expected.append(
                    ("held", Envelope(id: order.payload.postbackIdentifier, time: 1_700_000_000_000, body: .postbackDue(order))))
            }
        }
        return expected
    }

    @Test("every message 0.1.0 wrote on a stream is read as the same message, and written back as JSON")
    func everyBinaryFormIsRead() throws {
        let entries = try Self.entries()
        let expected = Self.expected()
        try #require(entries.count == expected.count)
        #expect(Set(entries.map(\.type)) == Set(MessageType.allCases.map(\.rawValue) + ["held"]), "every type is in the fixture")
        for (entry, want) in zip(entries, expected) {
            #expect(entry.type == want.type)
            let envelope = try Envelope.decode(entry.bytes)
            #expect(envelope == want.envelope, "\(entry.type)")
            // What this release writes for it: one JSON object, read back as the same message.
            let json = try envelope.encoded()
            #expect(try JSONSerialization.jsonObject(with: Data(json)) is [String: Any])
            #expect(try Envelope.decode(json) == envelope, "\(entry.type)")
        }
    }

    @Test("only refusals were JSON in 0.1.0: every other entry of the fixture is binary, so the test reads both forms")
    func theFixtureIsBinary() throws {
        for entry in try Self.entries() {
            let binary = entry.bytes.first == 0xF5 || entry.bytes.first == 0xC1
            #expect(binary == (entry.type != MessageType.rejected.rawValue), "\(entry.type)")
        }
    }
}
