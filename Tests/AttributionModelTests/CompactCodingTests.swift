import AttributionModel
import Foundation
import Testing

@Suite("Compact coding of state blobs")
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
        let bytes = try CompactCoding.encode(value)
        #expect(bytes.first == CompactCoding.magic)
        #expect(try CompactCoding.decode(Primitives.self, from: bytes) == value)
    }

    /// The layout is pinned: blobs in Redis outlive the binary that wrote them.
    @Test func layoutIsPinned() throws {
        struct Small: Codable {
            var a: Int
            var b: String?
            var c: [Bool]
        }
        let bytes = try CompactCoding.encode(Small(a: -2, b: nil, c: [true]))
        #expect(
            bytes == [
                0xF5, 1,  // magic, version
                0x08, 12, 0, 0, 0,  // keyed container, 12 bytes
                1, 0x61, 0x03, 3,  // "a": signed, zigzag(-2) = 3
                1, 0x63, 0x07, 1, 0, 0, 0, 0x02,  // "c": array of 1 byte: true (nil "b" is left out, as in JSON)
            ])
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
            #expect(try CompactCoding.decode(Envelope.self, from: CompactCoding.encode(envelope)) == envelope)
        }
    }

    /// Blobs stored as JSON (before this form, or by an older binary during a rolling upgrade) still read.
    @Test func jsonIsStillRead() throws {
        let json = #"{"impressions":[],"conversions":[],"pendingUpdates":[],"installedAt":5}"#
        let state = try CompactCoding.decode(DeviceAttributionState.self, from: Array(json.utf8))
        #expect(state.installedAt == 5)
        var plan = PostbackPlan(
            attribution: F.attribution(), crowd: .init(tier: .two, sourceIdentifierDigits: 3, countryIsTierThree: false))
        var generator = SeededGenerator(seed: 3)
        _ = plan.closeWindow(0, policy: .realTime, using: &generator)
        let stored = try Array(JSONCoding.encoder.encode(plan))
        #expect(try CompactCoding.decode(PostbackPlan.self, from: stored) == plan)
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
        let bytes = try CompactCoding.encode(Newer(a: 1, extra: ["x": [1, 2]], b: "b"))
        #expect(try CompactCoding.decode(Older.self, from: bytes) == Older(b: "b", a: 1))
        #expect(throws: DecodingError.self) { try CompactCoding.decode(Stricter.self, from: bytes) }
    }

    /// Damaged bytes throw: every truncation and every single-byte change, never a crash or a hang.
    @Test func damagedBytesThrowNeverCrash() throws {
        var plan = PostbackPlan(
            attribution: F.attribution(nonWinners: []),
            crowd: .init(tier: .three, sourceIdentifierDigits: 4, countryIsTierThree: true))
        var generator = SeededGenerator(seed: 5)
        _ = plan.closeWindow(0, policy: .realTime, using: &generator)
        let bytes = try CompactCoding.encode(plan)
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
            try CompactCoding.decode(PostbackPlan.self, from: [CompactCoding.magic, 2] + bytes.dropFirst(2))
        }
    }

    @Test func integersOutOfRangeThrow() throws {
        struct Wide: Codable { var n: Int64 }
        struct Narrow: Codable { var n: Int8 }
        #expect(try CompactCoding.decode(Narrow.self, from: CompactCoding.encode(Wide(n: 127))).n == 127)
        #expect(throws: DecodingError.self) { try CompactCoding.decode(Narrow.self, from: CompactCoding.encode(Wide(n: 128))) }
    }
}
