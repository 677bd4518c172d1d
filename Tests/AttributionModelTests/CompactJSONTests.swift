import AttributionModel
import Foundation
import Testing

@testable import AttributionModel

/// `CompactJSON` writes a message's JSON from its compact form: the bytes must be JSONEncoder's, for
/// every message type, full and bare, and anything it cannot write exactly must be left to JSONEncoder.
struct CompactJSONTests {
    @Test("every message type, full and bare: JSONEncoder's bytes")
    func sameBytesAsJSONEncoder() throws {
        for body in MessageSamples.bodies(full: true) + MessageSamples.bodies(full: false) + EnvelopeAndStateTests.everyBody {
            let envelope = Envelope(id: "m-1", time: 1_700_000_000_000, body: body)
            let json = try #require(CompactJSON.json(try CompactCoding.encode(envelope)), "\(envelope.type)")
            let expected = Array(try JSONCoding.encoder.encode(envelope))
            #expect(
                json == expected,
                "\(envelope.type)\n\(String(decoding: json, as: UTF8.self))\n\(String(decoding: expected, as: UTF8.self))")
            #expect(try envelope.encoded() == expected)
        }
    }

    @Test("text JSONEncoder would escape, and damaged bytes, are left to JSONEncoder")
    func escapesAndDamageAreLeftAlone() throws {
        let refusal = Envelope(
            time: 1, body: .rejected(Rejection(reason: .invalidBody, detail: "a \"quoted\" détail\n", eventIdentifier: "e")))
        let compact = try CompactCoding.encode(refusal)
        #expect(CompactJSON.json(compact) == nil)
        #expect(try refusal.encoded() == Array(try JSONCoding.encoder.encode(refusal)))
        for length in 0..<compact.count { #expect(CompactJSON.json(Array(compact.prefix(length))) == nil) }
        #expect(CompactJSON.json(compact + [0]) == nil)
        #expect(CompactJSON.json(Array("{}".utf8)) == nil)
    }
}
