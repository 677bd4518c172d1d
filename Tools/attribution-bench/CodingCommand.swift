import ArgumentParser
import AttributionModel
import Foundation

/// Measures the pipeline's two codecs, each against Foundation's JSON for the same value: the
/// stored-state codec (`CompactCoding`) for a device's attribution state (read and written by
/// attribution-winner on every event of the device) and a conversion's postback plan (read and written
/// by the scheduler on every message of the conversion), and the message codec (`Envelope.encoded` and
/// `decode`) for the messages every impression and conversion sends. Each sample is decoded and
/// encoded `--rounds` times. The samples are real blobs captured from `scripts/demo.sh` (a device with
/// four impressions, a settling conversion and a pending update; a plan with three windows closed and
/// five postbacks prepared).
struct CodingCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coding",
        abstract:
            "CPU µs to decode and encode stored states (stored-state codec) and stream messages (message codec), each against Foundation's JSON."
    )

    @Option(help: "Decode-and-encode rounds per sample and codec.")
    var rounds = 20_000

    @Flag(help: "Print the figures as one JSON object instead of text.")
    var json = false

    struct Figure: Codable {
        var sample: String
        /// `stored-state` or `message`.
        var codec: String
        var bytes: Int
        var microseconds: Double
        /// Foundation's JSONEncoder and JSONDecoder on the same value.
        var foundationBytes: Int
        var foundationMicroseconds: Double
    }

    func run() throws {
        let figures = [
            try measure("device state", json: Self.deviceState) {
                CompactCoding.encode($0)
            } decode: {
                try CompactCoding.decode(DeviceAttributionState.self, from: $0)
            },
            try measure("postback plan", json: Self.postbackPlan) {
                CompactCoding.encode($0)
            } decode: {
                try CompactCoding.decode(PostbackPlan.self, from: $0)
            },
            try measureEnvelope("impression.reported envelope", try Envelope.decode(Array(Self.reportedImpression.utf8))),
            try measureEnvelope("impression.verified envelope", try Envelope.decode(Array(Self.verifiedImpression.utf8))),
            try measureEnvelope("conversion.attributed envelope", try Self.attributed()),
            try measureEnvelope("postback.due envelope", Self.postbackDue),
        ]
        if json {
            print(String(decoding: try JSONCoding.encoder.encode(figures), as: UTF8.self))
            return
        }
        for figure in figures {
            let ratio = figure.foundationMicroseconds / figure.microseconds
            print(
                "\(figure.sample): \(figure.codec) codec \(figure.bytes) B, \(format(figure.microseconds)) µs; "
                    + "Foundation JSON \(figure.foundationBytes) B, \(format(figure.foundationMicroseconds)) µs "
                    + "(decode + encode; \(format(ratio))× faster)")
        }
    }

    private func format(_ value: Double) -> String { String(format: "%.1f", value) }

    /// A stored blob: the stored-state codec against Foundation's JSON of the same value.
    private func measure<T: Codable & Equatable>(
        _ name: String, json: String, encode: (T) -> [UInt8], decode: ([UInt8]) throws -> T
    ) throws -> Figure {
        let value = try JSONCoding.decoder.decode(T.self, from: Data(json.utf8))
        let stored = encode(value)
        guard try decode(stored) == value else { throw ValidationError("\(name): the stored round trip changed the value") }
        return try figure(name, codec: "stored-state", value, bytes: stored) { encode(try decode($0)) }
    }

    /// A stream message: the message codec against Foundation's JSON of the same envelope.
    private func measureEnvelope(_ name: String, _ value: Envelope) throws -> Figure {
        let bytes = try value.encoded()
        guard try Envelope.decode(bytes) == value else { throw ValidationError("\(name): a round trip changed the envelope") }
        return try figure(name, codec: "message", value, bytes: bytes) { try Envelope.decode($0).encoded() }
    }

    private func figure<T: Codable>(
        _ name: String, codec: String, _ value: T, bytes: [UInt8], roundTrip: ([UInt8]) throws -> [UInt8]
    ) throws -> Figure {
        let foundation = Array(try JSONCoding.encoder.encode(value))
        let codecTime = try time { try roundTrip(bytes).count }
        let foundationTime = try time {
            try JSONCoding.encoder.encode(JSONCoding.decoder.decode(T.self, from: Data(foundation))).count
        }
        return Figure(
            sample: name, codec: codec, bytes: bytes.count, microseconds: codecTime, foundationBytes: foundation.count,
            foundationMicroseconds: foundationTime)
    }

    /// Mean µs per round (the first tenth is a warm-up, not counted).
    private func time(_ body: () throws -> Int) throws -> Double {
        var sink = 0
        for _ in 0..<max(1, rounds / 10) { sink &+= try body() }
        let start = ContinuousClock.now
        for _ in 0..<rounds { sink &+= try body() }
        let elapsed = ContinuousClock.now - start
        if sink == 42 { print("") }  // keeps the work from being optimised away
        return Double(elapsed.components.seconds) * 1e6 / Double(rounds)
            + Double(elapsed.components.attoseconds) / 1e12 / Double(rounds)
    }

    static let deviceState = #"""
        {
         "conversions": [],
         "impressions": [
          {
           "device-identifier": "device-8965c55d-cc71-4822-b481-e86daa23906f",
           "interaction": {
            "loaded-at": 1795537160501,
            "time": 1795537190369,
            "type": "click"
           },
           "kind": "aak",
           "payload": {
            "ad-network-identifier": "sim-network-2.adattributionkit",
            "advertised-item-identifier": 1108187390,
            "impression-identifier": "28908427-B244-4CA4-925B-FC930547EEC9",
            "impression-type": "app-impression",
            "publisher-item-identifier": 5838494,
            "source-identifier": 354,
            "timestamp": 1795537175369
           }
          },
          {
           "device-identifier": "device-8965c55d-cc71-4822-b481-e86daa23906f",
           "interaction": {
            "loaded-at": 1795537131658,
            "time": 1795537190369,
            "type": "click"
           },
           "kind": "aak",
           "payload": {
            "ad-network-identifier": "sim-network-1.adattributionkit",
            "advertised-item-identifier": 1108187390,
            "impression-identifier": "4E5121FB-4F3B-4D19-8938-A9688613E11F",
            "impression-type": "app-impression",
            "publisher-item-identifier": 5838495,
            "source-identifier": 1383,
            "timestamp": 1795537175369
           }
          },
          {
           "device-identifier": "device-8965c55d-cc71-4822-b481-e86daa23906f",
           "interaction": {
            "loaded-at": 1795537174016,
            "time": 1795537190369,
            "type": "click"
           },
           "kind": "aak",
           "payload": {
            "ad-network-identifier": "sim-network-1.adattributionkit",
            "advertised-item-identifier": 1108187390,
            "impression-identifier": "1DC34773-C01A-4453-A112-5289D15614AF",
            "impression-type": "app-impression",
            "publisher-item-identifier": 5838493,
            "source-identifier": 4097,
            "timestamp": 1795537175369
           }
          },
          {
           "device-identifier": "device-8965c55d-cc71-4822-b481-e86daa23906f",
           "interaction": {
            "loaded-at": 1795537183481,
            "time": 1795537190376,
            "type": "click"
           },
           "kind": "aak",
           "payload": {
            "ad-network-identifier": "sim-network-1.adattributionkit",
            "advertised-item-identifier": 1108187390,
            "impression-identifier": "92EA7B03-0A26-4AE2-8CBC-ADE27F7C28C7",
            "impression-type": "app-impression",
            "publisher-item-identifier": 5838494,
            "source-identifier": 153,
            "timestamp": 1795537180371
           }
          }
         ],
         "pendingActivities": [],
         "pendingUpdates": [
          {
           "advertised-item-identifier": 1108187390,
           "device-identifier": "device-8965c55d-cc71-4822-b481-e86daa23906f",
           "event-identifier": "8d9f2d13-03ef-48f3-a70e-094ba7e93f2d",
           "received-at": 1795537190458,
           "time": 1795537190378,
           "update": {
            "coarseConversionValue": "medium",
            "fineConversionValue": 57,
            "lockPostback": true
           }
          }
         ],
         "settling": [
          {
           "conversionIdentifier": "8ffaad66-45f2-4d74-82c0-65484f2f4179",
           "conversionType": "download",
           "time": 1795537190377
          }
         ]
        }
        """#

    static let postbackPlan = #"""
        {
         "attribution": {
          "advertised-item-identifier": 1108187390,
          "conversion-identifier": "e834f428-d43e-4749-96ca-39aaf8416fd4",
          "conversion-time": 1795537190331,
          "conversion-type": "download",
          "country-code": "JP",
          "non-winners": [
           {
            "ad-network-identifier": "sim-network-1.adattributionkit",
            "impression-identifier": "D5281766-2971-46B4-AE90-83FF2C4ED553",
            "interaction-type": "click",
            "kind": "aak",
            "publisher-item-identifier": 5838494,
            "source-identifier": 3357
           },
           {
            "ad-network-identifier": "sim-network-2.adattributionkit",
            "impression-identifier": "DB2C64AC-FF96-441C-981F-EF3601DCAAB9",
            "interaction-type": "view",
            "kind": "aak",
            "publisher-item-identifier": 5838494,
            "source-identifier": 7537
           }
          ],
          "winner": {
           "ad-network-identifier": "sim-network-3.adattributionkit",
           "impression-identifier": "38381BB3-82E7-41DA-A2B9-A317DA4C9388",
           "interaction-type": "click",
           "kind": "aak",
           "publisher-item-identifier": 5838493,
           "source-identifier": 2786
          }
         },
         "closed": [
          {
           "at": 1795537192331,
           "postbacks": [
            {
             "contender": 0,
             "dueAt": 1795537193394,
             "identifier": "296bcd38-dae7-451e-8b6a-0b06cb2f8026"
            },
            {
             "contender": 1,
             "dueAt": 1795537193438,
             "identifier": "ab31b154-7196-4f5d-885d-dd69ab5c7c4f"
            },
            {
             "contender": 2,
             "dueAt": 1795537193983,
             "identifier": "3592ea7f-53c9-402a-8807-191bd6c93626"
            }
           ],
           "values": {
            "coarse": "medium",
            "fine": 8
           }
          },
          {
           "at": 1795537194331,
           "postbacks": [
            {
             "contender": 0,
             "dueAt": 1795537199143,
             "identifier": "df951c8f-80f8-401b-8cc5-ce776cc8a821"
            }
           ],
           "values": {
            "coarse": "high",
            "fine": 42
           }
          },
          {
           "at": 1795537225331,
           "postbacks": [
            {
             "contender": 0,
             "dueAt": 1795537228590,
             "identifier": "e365c896-02c9-4859-b88f-b8a1ad98b4ba"
            }
           ],
           "values": {
            "coarse": "high",
            "fine": 42
           }
          }
         ],
         "crowd": {
          "countryIsTierThree": false,
          "sourceIdentifierDigits": 2,
          "tier": 1
         },
         "firstUpdateAt": 1795537190332,
         "reported": [
          {
           "coarse": "medium",
           "fine": 8,
           "time": 1795537190332
          },
          {
           "coarse": "high",
           "fine": 42,
           "time": 1795537194331
          }
         ],
         "windowsDone": [
          true,
          true,
          true
         ]
        }
        """#

    /// What attribution-winner sends the scheduler for an install with a winner and two non-winners,
    /// and what the scheduler sends the dispatcher for a held postback (as the demo's).
    static func attributed() throws -> Envelope {
        let plan = try JSONCoding.decoder.decode(PostbackPlan.self, from: Data(postbackPlan.utf8))
        return Envelope(
            id: "e834f428-d43e-4749-96ca-39aaf8416fd4", time: 1_795_537_190_331, body: .conversionAttributed(plan.attribution))
    }

    static var postbackDue: Envelope {
        let order = PostbackOrder(
            payload: PostbackPayload(
                adNetworkIdentifier: AdNetworkIdentifier("sim-network-3.adattributionkit")!, sourceIdentifier: "2786",
                advertisedItemIdentifier: 1_108_187_390, publisherItemIdentifier: 5_838_493, conversionType: .download,
                marketplaceIdentifier: PostbackPayload.appStoreMarketplace,
                postbackIdentifier: "296bcd38-dae7-451e-8b6a-0b06cb2f8026",
                postbackSequenceIndex: 0, didWin: true),
            adInteractionType: .click, conversionValue: 8, coarseConversionValue: .medium, countryCode: "JP",
            isDevelopment: false,
            impressionKind: .adAttributionKit)
        return Envelope(id: order.payload.postbackIdentifier, time: 1_795_537_193_394, body: .postbackDue(order))
    }

    /// Messages captured from `scripts/bench.sh`'s load: what ingest writes to `events` for a signed
    /// impression, and what the verifier writes to `verified` for it.
    static let reportedImpression = #"""
        {"body":{"device-identifier":"bench-device-5","impression":"eyJhbGciOiJFUzI1NiIsImtpZCI6ImJlbmNoLmFkYXR0cmlidXRpb25raXQifQ.eyJhZC1uZXR3b3JrLWlkZW50aWZpZXIiOiJiZW5jaC5hZGF0dHJpYnV0aW9ua2l0IiwiYWR2ZXJ0aXNlZC1pdGVtLWlkZW50aWZpZXIiOjExMDgxODczOTAsImltcHJlc3Npb24taWRlbnRpZmllciI6IkM1QjFEQjIxLThFRUUtNDIzNC04NkI4LTlFNEFEQTI2ODkzRSIsImltcHJlc3Npb24tdHlwZSI6ImFwcC1pbXByZXNzaW9uIiwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6NTgzODQ5Miwic291cmNlLWlkZW50aWZpZXIiOjY5OTAsInRpbWVzdGFtcCI6MTc5NTU3MDg2MzE2M30.8HhWMAqUolfe7Vosn85Z9kYzfOHRAHY_RohBziOI-1orXqO30_nyOeKgzMssaL029b36FdCPZq7nD4tQwkMYSw","interaction":{"loaded-at":1795570863663,"time":1795570864163,"type":"click"},"received-at":1795570924143},"id":"05657ae2-5ff2-4789-8ba9-6405219baf9f","schema":1,"time":1795570864163,"type":"impression.reported"}
        """#

    static let verifiedImpression = #"""
        {"body":{"device-identifier":"bench-device-24","interaction":{"loaded-at":1795570773789,"time":1795570774289,"type":"click"},"kind":"aak","payload":{"ad-network-identifier":"bench.adattributionkit","advertised-item-identifier":1108187390,"impression-identifier":"E095CC8F-B36D-4C2E-B686-446E1D06C598","impression-type":"app-impression","publisher-item-identifier":5838492,"source-identifier":7901,"timestamp":1795570773289}},"id":"657d5e8d-b7dd-4fca-ab10-7fe4aed90d34","schema":1,"time":1795570774289,"type":"impression.verified"}
        """#
}
