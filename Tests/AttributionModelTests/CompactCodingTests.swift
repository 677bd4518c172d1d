import Foundation
import Testing

@testable import AttributionModel

/// The compact layout itself, through its `Codable` reader (`CompactDecoder`: `PlainJSON`'s transient
/// form, 0.1.0's envelopes) and release 0.1.0's `Codable` writer, and the stored-state codec's refusals.
@Suite("Compact coding: the layout")
struct CompactCodingTests {
    typealias F = Fixture

    struct Primitives: Codable, Equatable {
        var int: Int
        var int8: Int8
        var int64: Int64
        var uint64: UInt64
        var double: Double
        var bool: Bool
        var text: String
        var optional: Int?
        var list: [String?]
        var nested: [[Int]]
        var map: [String: Int]
        var revenue: [String: Decimal] = [:]
    }

    static let primitives: [Primitives] = [
        .init(
            int: 0, int8: 0, int64: 0, uint64: 0, double: 0, bool: false, text: "", optional: nil, list: [], nested: [],
            map: [:]),
        .init(
            int: .min, int8: .min, int64: .min, uint64: .max, double: -.infinity, bool: true, text: "é 日本 🎯",
            optional: -1, list: [nil, "a", nil], nested: [[], [1, -1, 300]], map: ["a": 1, "": -2],
            revenue: ["USD": Decimal(string: "-0.000123")!, "EUR": Decimal(string: "12345678901234567890.5")!]),
        .init(
            int: .max, int8: .max, int64: .max, uint64: 1 << 63, double: 1e-300, bool: true,
            text: String(repeating: "x", count: 300), optional: 0, list: [""], nested: [[.max, .min]],
            map: ["key:with:colons": .max]),
    ]

    @Test(arguments: primitives) func primitivesRoundTrip(value: Primitives) throws {
        let bytes = try CompactCoding.encodeByCodable(value)
        #expect(bytes.first == CompactCoding.magic)
        #expect(try CompactCoding.decodeByCodable(Primitives.self, from: bytes) == value)
    }

    struct Small: Codable, Equatable {
        var a: Int
        var b: String?
        var c: [Bool]
        var time: Int64
    }

    /// The layout is pinned: blobs in Redis outlive the binary that wrote them.
    @Test func layoutIsPinned() throws {
        let version2: [UInt8] = [
            0xF5, 2,  // magic, version
            0x08, 15, 0, 0, 0,  // keyed container, 15 bytes
            2, 0x61, 0x03, 3,  // "a" (not in the key table: 2 × 1 byte, then its text): signed, zigzag(-2) = 3
            2, 0x63, 0x07, 1, 0, 0, 0, 0x02,  // "c": array of 1 byte: true (nil "b" is left out, as in JSON)
            1, 0x03, 0x54,  // "time", key number 0 (2 × 0 + 1): signed, zigzag(42) = 84
        ]
        let value = Small(a: -2, b: nil, c: [true], time: 42)
        #expect(try CompactCoding.encodeByCodable(value) == version2)
        #expect(try CompactCoding.decodeByCodable(Small.self, from: version2) == value)
        // A numbered key may also be written as its text (PlainJSON's transient form): read the same.
        let textKeys: [UInt8] = [
            0xF5, 2, 0x08, 19, 0, 0, 0, 2, 0x61, 0x03, 3, 2, 0x63, 0x07, 1, 0, 0, 0, 0x02, 8, 0x74, 0x69, 0x6D, 0x65, 0x03, 0x54,
        ]
        #expect(try CompactCoding.decodeByCodable(Small.self, from: textKeys) == value)
        // One format: another version byte, or JSON where the compact form is stored, is refused.
        var version1 = textKeys
        version1[1] = 1
        #expect(throws: DecodingError.self) { try CompactCoding.decodeByCodable(Small.self, from: version1) }
        #expect(throws: DecodingError.self) {
            try CompactCoding.decodeByCodable(Small.self, from: Array(#"{"a":-2,"c":[true],"time":42}"#.utf8))
        }
    }

    /// The key table is append-only: these numbers are in blobs in Redis. A new key goes at the end of
    /// `CompactKeys.names` and of this list; nothing here is ever reordered, renamed or removed.
    @Test func keyTableIsPinned() throws {
        let pinned = [
            "time", "type", "body", "id", "schema", "advertised-item-identifier", "device-identifier", "received-at",
            "conversion-identifier", "conversion-type", "country-code", "ad-network-identifier",
            "publisher-item-identifier", "source-identifier", "impression-identifier", "kind", "interaction", "loaded-at",
            "update", "fineConversionValue", "coarseConversionValue", "lockPostback", "payload", "impression-type",
            "timestamp", "impressions", "conversions", "pendingUpdates", "settling", "pendingActivities", "window",
            "report", "app", "item-identifier", "conversionIdentifier", "conversionType", "conversion-time", "winner",
            "interaction-type", "non-winners", "fine", "coarse", "event-identifier", "settlesAfter", "attribution",
            "crowd", "tier", "sourceIdentifierDigits", "countryIsTierThree", "firstUpdateAt", "reported", "windowsDone",
            "impression", "installedAt", "closed", "at", "values", "postbacks", "contender", "identifier", "dueAt",
            "postback-identifier", "destination", "url", "attempts", "order", "marketplace-identifier",
            "postback-sequence-index", "did-win", "ad-interaction-type", "conversion-value", "development",
            "impression-kind", "first-attempt-at", "last-error", "activityTotals", "begin", "coarse-conversion-value",
            "conversion-tag", "conversionTag", "conversionTypes", "eligible-for-re-engagement", "jws-string",
            "schemaValues", "valueSchema", "heldByVerifier",
        ]
        let names = CompactKeys.names.map { $0.description }
        #expect(Array(names.prefix(pinned.count)) == pinned)
        #expect(Set(names).count == names.count)
        for (number, name) in names.enumerated() {
            var name = name
            #expect(name.withUTF8 { CompactKeys.number(of: $0) } == number)
            #expect(CompactKeys.text(UInt64(number)).map { String(decoding: $0, as: UTF8.self) } == name)
        }
        for other in ["", "tim", "times", "Time", "key:with:colons", String(repeating: "x", count: 300)] {
            var other = other
            #expect(other.withUTF8 { CompactKeys.number(of: $0) } == nil)
        }
        #expect(CompactKeys.text(UInt64(names.count)) == nil)
    }

    /// A key number past this binary's table (a newer writer's key) is skipped like an unknown key.
    @Test func unknownKeyNumbersAreSkipped() throws {
        let past = UInt64(CompactKeys.names.count) * 2 + 1
        let key: [UInt8] = [UInt8(past & 0x7F) | 0x80, UInt8(past >> 7)]  // a two-byte varint (128 ≤ past < 16384)
        let bytes: [UInt8] = [0xF5, 2, 0x08, 7, 0, 0, 0] + key + [0x03, 6, 1, 0x03, 0x54]
        struct Timed: Codable, Equatable { var time: Int64 }
        #expect(try CompactCoding.decodeByCodable(Timed.self, from: bytes) == Timed(time: 42))
    }

    @Test func modelStatesRoundTrip() throws {
        var state = DeviceAttributionState()
        state.record(F.impression("click", at: 1_000))
        state.record(F.impression("view", type: .view, at: 2_000, reengagement: true))
        state.installedAt = 5
        state.settle(
            ConversionReport(
                deviceIdentifier: "d", advertisedItemIdentifier: F.app, conversionType: .download, time: 3, receivedAt: 4),
            conversionIdentifier: "settling")
        _ = state.receive(
            ValueUpdateReport(
                deviceIdentifier: "d", advertisedItemIdentifier: F.app, update: .init(fineConversionValue: 9), time: 9,
                receivedAt: 9))
        #expect(try CompactCoding.decode(DeviceAttributionState.self, from: CompactCoding.encode(state)) == state)
        for body in EnvelopeAndStateTests.everyBody {
            let envelope = Envelope(time: 42, body: body)
            #expect(try CompactCoding.decodeByCodable(Envelope.self, from: CompactCoding.encodeByCodable(envelope)) == envelope)
        }
    }

    /// One format per stored thing: a state or a plan stored as JSON is not read (nothing released
    /// ever wrote one); the readers refuse it rather than guess.
    @Test func jsonIsNotReadWhereTheCompactFormIsStored() throws {
        let json = #"{"impressions":[],"conversions":[],"pendingUpdates":[],"installedAt":5}"#
        #expect(throws: DecodingError.self) { try CompactCoding.decode(DeviceAttributionState.self, from: Array(json.utf8)) }
        var plan = PostbackPlan(
            attribution: F.attribution(), crowd: .init(tier: .two, sourceIdentifierDigits: 3, countryIsTierThree: false))
        _ = plan.closeWindow(0, policy: .realTime, identifiers: Fixture.identifiers)
        let stored = try Array(JSONCoding.encoder.encode(plan))
        #expect(throws: DecodingError.self) { try CompactCoding.decode(PostbackPlan.self, from: stored) }
    }

    /// A key this binary does not know is skipped (a newer writer); a missing one reads as JSON would.
    @Test func unknownKeysAreSkippedAndMissingOnesReported() throws {
        struct Newer: Codable {
            var a: Int
            var extra: [String: [Int]]
            var b: String
        }
        struct Older: Codable, Equatable {
            var b: String
            var a: Int
        }
        struct Stricter: Codable {
            var a: Int
            var required: Int
        }
        let bytes = try CompactCoding.encodeByCodable(Newer(a: 1, extra: ["x": [1, 2]], b: "b"))
        #expect(try CompactCoding.decodeByCodable(Older.self, from: bytes) == Older(b: "b", a: 1))
        #expect(throws: DecodingError.self) { try CompactCoding.decodeByCodable(Stricter.self, from: bytes) }
    }

    /// Damaged bytes throw: every truncation and every single-byte change, never a crash or a hang.
    @Test func damagedBytesThrowNeverCrash() throws {
        var plan = PostbackPlan(
            attribution: F.attribution(nonWinners: []),
            crowd: .init(tier: .three, sourceIdentifierDigits: 4, countryIsTierThree: true))
        _ = plan.closeWindow(0, policy: .realTime, identifiers: Fixture.identifiers)
        let bytes = CompactCoding.encode(plan)
        for length in 0..<bytes.count {
            #expect(throws: (any Error).self) { try CompactCoding.decode(PostbackPlan.self, from: Array(bytes.prefix(length))) }
        }
        for index in 2..<bytes.count {
            for replacement: UInt8 in [0x00, 0x07, 0x08, 0x7F, 0xFF] where bytes[index] != replacement {
                var damaged = bytes
                damaged[index] = replacement
                _ = try? CompactCoding.decode(PostbackPlan.self, from: damaged)  // throws or decodes; must return
            }
        }
        #expect(throws: (any Error).self) { try CompactCoding.decode(PostbackPlan.self, from: bytes + [0]) }
        #expect(throws: (any Error).self) {
            try CompactCoding.decode(PostbackPlan.self, from: [CompactCoding.magic, 3] + bytes.dropFirst(2))
        }
    }

    @Test func integersOutOfRangeThrow() throws {
        struct Wide: Codable { var n: Int64 }
        struct Narrow: Codable { var n: Int8 }
        #expect(try CompactCoding.decodeByCodable(Narrow.self, from: CompactCoding.encodeByCodable(Wide(n: 127))).n == 127)
        #expect(throws: DecodingError.self) {
            try CompactCoding.decodeByCodable(Narrow.self, from: CompactCoding.encodeByCodable(Wide(n: 128)))
        }
    }
}
