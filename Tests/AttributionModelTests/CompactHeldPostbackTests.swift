import AttributionModel
import Foundation
import Testing

@Suite("Compact held postbacks")
struct CompactHeldPostbackTests {
    static func randomOrder(using generator: inout some RandomNumberGenerator) -> PostbackOrder {
        let fine = Bool.random(using: &generator) ? Int.random(in: 0...63, using: &generator) : nil
        let payload = PostbackPayload(
            impressionType: Int.random(in: 0..<10, using: &generator) == 0 ? "skadnetwork" : ImpressionPayload.appImpression,
            adNetworkIdentifier: AdNetworkIdentifier("net\(Int.random(in: 0...999_999, using: &generator)).adattributionkit")!,
            sourceIdentifier: String(Int.random(in: 0...9999, using: &generator)),
            advertisedItemIdentifier: ItemIdentifier.random(in: 1...9_999_999_999, using: &generator),
            publisherItemIdentifier: Bool.random(using: &generator)
                ? ItemIdentifier.random(in: 0...UInt64.max, using: &generator) : nil,
            conversionType: ConversionType.allCases.randomElement(using: &generator)!,
            marketplaceIdentifier: [nil, PostbackPayload.appStoreMarketplace, "com.example.store"].randomElement(
                using: &generator)!,
            postbackIdentifier: Int.random(in: 0..<20, using: &generator) == 0
                ? "not-a-uuid-\(Int.random(in: 0...99, using: &generator))" : RandomUUID.make(using: &generator),
            postbackSequenceIndex: Int.random(in: 0...2, using: &generator), didWin: Bool.random(using: &generator))
        return PostbackOrder(
            payload: payload, adInteractionType: Bool.random(using: &generator) ? .click : .view, conversionValue: fine,
            coarseConversionValue: fine == nil ? CoarseConversionValue.allCases.randomElement(using: &generator) : nil,
            countryCode: Bool.random(using: &generator) ? "US" : nil, isDevelopment: Bool.random(using: &generator),
            impressionKind: Bool.random(using: &generator) ? .skAdNetwork : .adAttributionKit)
    }

    @Test func tenThousandRandomOrdersRoundTripExactly() throws {
        var generator = SeededGenerator(seed: 31)
        for _ in 0..<10_000 {
            let order = Self.randomOrder(using: &generator)
            let due = Milliseconds.random(in: 0...4_000_000_000_000, using: &generator)
            let bytes = CompactHeldPostback.encode(order, dueAt: due)
            let decoded = try CompactHeldPostback.decode(bytes)
            #expect(decoded.order == order && decoded.dueAt == due)
        }
    }

    /// A tier-3 winning postback with every field: what the memory budget is about.
    @Test func aFullPostbackTakesUnderAHundredBytes() throws {
        var generator = SeededGenerator(seed: 32)
        let order = PostbackOrder(
            payload: PostbackPayload(
                adNetworkIdentifier: AdNetworkIdentifier("example123.adattributionkit")!, sourceIdentifier: "5239",
                advertisedItemIdentifier: 1_108_187_390, publisherItemIdentifier: 5_838_492, conversionType: .download,
                marketplaceIdentifier: PostbackPayload.appStoreMarketplace,
                postbackIdentifier: RandomUUID.make(using: &generator),
                postbackSequenceIndex: 0, didWin: true),
            adInteractionType: .click, conversionValue: 42, coarseConversionValue: nil, countryCode: "US", isDevelopment: false)
        let compact = CompactHeldPostback.encode(order, dueAt: 1_800_000_000_000)
        let json = try Envelope(time: 1_800_000_000_000, body: .postbackDue(order)).encoded()
        #expect(compact.count < 100, "\(compact.count) bytes")
        #expect(compact.count * 5 < json.count, "compact \(compact.count) bytes, JSON \(json.count)")
        // Released, a held postback is its `postback.due` message.
        let envelope = try Envelope.released(compact)
        #expect(envelope.body == .postbackDue(order) && envelope.time == 1_800_000_000_000)
        #expect(envelope.id == order.payload.postbackIdentifier)
    }

    @Test func everyTruncationAndCorruptionIsRefusedNotTrapped() {
        var generator = SeededGenerator(seed: 33)
        let bytes = CompactHeldPostback.encode(Self.randomOrder(using: &generator), dueAt: 1_800_000_000_000)
        for length in 0..<bytes.count {
            #expect(throws: CompactHeldPostback.Malformed.self) { try CompactHeldPostback.decode(Array(bytes.prefix(length))) }
        }
        #expect(throws: CompactHeldPostback.Malformed.self) { try CompactHeldPostback.decode(bytes + [0]) }
        // Random corruption may decode to another order, but never traps.
        for _ in 0..<2_000 {
            var corrupted = bytes
            corrupted[Int.random(in: 1..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            _ = try? CompactHeldPostback.decode(corrupted)
        }
    }
}
