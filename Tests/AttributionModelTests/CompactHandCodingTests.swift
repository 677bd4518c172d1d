import Foundation
import Testing

@testable import AttributionModel

/// The hand-written compact form of postback plans, device states and envelopes (`CompactHandCoded`) against the
/// `Codable` one it stands in for: the same bytes out, the same value back, and anything in another
/// layout (or a body without a hand-written form) read and written the `Codable` way.
@Suite("Hand-written compact coding of plans, device states and envelopes")
struct CompactHandCodingTests {
    typealias F = Fixture

    static let tier2 = CrowdAssessment(tier: .two, sourceIdentifierDigits: 3, countryIsTierThree: false)

    static func update(_ fine: Int, _ coarse: CoarseConversionValue?, lock: Bool = false, at time: Milliseconds)
        -> AttributedUpdate
    {
        AttributedUpdate(
            conversionIdentifier: "c-1",
            update: PostbackUpdate(fineConversionValue: fine, coarseConversionValue: coarse, lockPostback: lock), time: time)
    }

    /// Plans in every shape the scheduler stores: fresh, with updates (fine only, coarse only, both),
    /// windows closed with and without values, locked, superseded, with five non-winners and every
    /// optional attribution field, a development winner, and an app with a schema and activity.
    static var plans: [PostbackPlan] {
        let others = (1...5).map { index in
            AttributedImpression(
                adNetworkIdentifier: F.network("n\(index).skadnetwork"), impressionIdentifier: "i-\(index)",
                sourceIdentifier: index * 1111, publisherItemIdentifier: ItemIdentifier(index), interactionType: .view,
                kind: index.isMultiple(of: 2) ? .skAdNetwork : .adAttributionKit)
        }
        var plans: [PostbackPlan] = []
        let fresh = PostbackPlan(attribution: F.attribution(), crowd: tier2)
        plans.append(fresh)

        var updated = PostbackPlan(attribution: F.attribution(nonWinners: others, country: nil), crowd: tier2)
        _ = updated.apply(update(10, nil, at: F.hour), policy: .realTime, identifiers: Fixture.identifiers)
        updated.reported.append(.init(time: 2 * F.hour, fine: nil, coarse: .medium))  // as a schema's value may leave it
        plans.append(updated)
        _ = updated.closeWindow(0, policy: .realTime, identifiers: Fixture.identifiers)
        plans.append(updated)
        _ = updated.apply(
            update(63, .high, lock: true, at: 3 * F.day), policy: .realTime, identifiers: Fixture.identifiers)
        // No value in window 2: it closes with nothing.
        _ = updated.closeWindow(2, policy: .realTime, identifiers: Fixture.identifiers)
        plans.append(updated)

        var tagged = F.attribution(nonWinners: Array(others.prefix(2)), type: .reengagement, at: -5)
        tagged.conversionTag = "tag-é"
        tagged.marketplaceIdentifier = "com.example.store"
        var superseded = PostbackPlan(
            attribution: tagged, crowd: .init(tier: .zero, sourceIdentifierDigits: 2, countryIsTierThree: true))
        _ = superseded.apply(update(0, .low, at: 0), policy: .realTime, identifiers: Fixture.identifiers)
        _ = superseded.supersede(at: F.hour, policy: .realTime, identifiers: Fixture.identifiers)
        plans.append(superseded)

        var development = PostbackPlan(attribution: F.attribution(publisher: 0), crowd: tier2)
        _ = development.apply(update(5, .low, at: 1_000), policy: .realTime, identifiers: Fixture.identifiers)
        plans.append(development)

        var schema = PostbackPlan(attribution: F.attribution(), crowd: tier2, valueSchema: PrivacyRun.schema)
        plans.append(schema)
        let activity = AttributedActivity(
            conversionIdentifier: "c-1",
            activity: Activity(sessions: 3, events: ["level": 2], revenue: ["USD": Decimal(string: "25.5")!]), time: F.hour)
        _ = schema.record(activity, policy: .realTime, identifiers: Fixture.identifiers)
        _ = schema.closeWindow(0, policy: .realTime, identifiers: Fixture.identifiers)
        plans.append(schema)
        return plans
    }

    @Test(arguments: plans) func sameBytesAsCodable(plan: PostbackPlan) throws {
        let byHand = try CompactCoding.encodeByHand(plan)
        #expect(byHand == (try CompactCoding.encodeByCodable(plan)))
        #expect(try CompactCoding.encode(plan) == byHand)
    }

    @Test(arguments: plans) func sameValueAsCodable(plan: PostbackPlan) throws {
        let bytes = try CompactCoding.encodeByCodable(plan)
        #expect(CompactCoding.decodeByHand(PostbackPlan.self, from: bytes) == plan)
        #expect(try CompactCoding.decodeByCodable(PostbackPlan.self, from: bytes) == plan)
    }

    /// The plans the scenario of a real run produces are covered: every field the table sets is set
    /// in some plan, or the table would prove less than it claims.
    @Test func tableCoversEveryOptionalField() {
        let plans = Self.plans
        #expect(plans.contains { $0.firstUpdateAt == nil } && plans.contains { $0.firstUpdateAt != nil })
        #expect(
            plans.contains { $0.reported.contains { $0.fine == nil } }
                && plans.contains { $0.reported.contains { $0.coarse == nil } })
        #expect(plans.contains { $0.closed.contains { $0 != nil && $0?.values == nil } })
        #expect(plans.contains { $0.closed.contains { $0?.values?.coarse != nil && $0?.postbacks.isEmpty == false } })
        #expect(plans.contains { $0.attribution.countryCode == nil } && plans.contains { $0.attribution.conversionTag != nil })
        #expect(plans.contains { $0.attribution.nonWinners.count == 5 })
        #expect(plans.contains { $0.valueSchema != nil && $0.activityTotals[0].sessions > 0 })
        #expect(plans.contains { $0.crowd == .development })
    }

    /// Another key order (a plan written by an older binary, say) is not the hand reader's: it gives up,
    /// and `CompactCoding.decode` reads the bytes the `Codable` way.
    @Test func otherLayoutsFallBackToCodable() throws {
        struct Reordered: Encodable {
            let plan: PostbackPlan
            enum Keys: String, CodingKey { case crowd, attribution, reported, windowsDone, firstUpdateAt }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(plan.crowd, forKey: .crowd)
                try container.encode(plan.attribution, forKey: .attribution)
                try container.encode(plan.reported, forKey: .reported)
                try container.encode(plan.windowsDone, forKey: .windowsDone)
                try container.encodeIfPresent(plan.firstUpdateAt, forKey: .firstUpdateAt)
            }
        }
        let plan = Self.plans[1]
        let bytes = try CompactCoding.encodeByCodable(Reordered(plan: plan))
        #expect(CompactCoding.decodeByHand(PostbackPlan.self, from: bytes) == nil)
        #expect(try CompactCoding.decode(PostbackPlan.self, from: bytes) == plan)
        // A key the hand reader does not know (a newer writer's) is skipped by the Codable reader.
        var extended = try CompactCoding.encodeByHand(plan)
        let extra: [UInt8] = [2 * 5] + Array("later".utf8) + [CompactCoding.Tag.trueValue]
        extended.insert(contentsOf: extra, at: extended.count)
        let count = UInt32(extended.count - 7)
        for index in 0..<4 { extended[3 + index] = UInt8(truncatingIfNeeded: count >> (8 * index)) }
        #expect(CompactCoding.decodeByHand(PostbackPlan.self, from: extended) == nil)
        #expect(try CompactCoding.decode(PostbackPlan.self, from: extended) == plan)
    }

    /// Every body the pipeline sends, plus optional fields both ways (a view with its begin, a
    /// re-engagement flag, a SKAdNetwork report): 0.1.0 sent these in the compact form, which this
    /// release still reads (through `Codable`: no envelope is written compact any more).
    static var envelopes: [Envelope] {
        var view = F.impression("v", type: .view, at: 9, reengagement: true)
        view.interaction = .view(begin: 1, end: 9)
        var skan = ImpressionReport(
            deviceIdentifier: "d", impression: "x", interaction: .click(at: 1, loadedAt: 0), receivedAt: 2)
        skan.impression = nil
        skan.skadnetworkImpression = nil
        var update = ValueUpdateReport(
            deviceIdentifier: "d", advertisedItemIdentifier: 1,
            update: .init(
                fineConversionValue: 63, coarseConversionValue: .high, conversionTypes: [.reengagement], conversionTag: "t"),
            time: 1, receivedAt: 2)
        update.eventIdentifier = "e"
        let bodies =
            EnvelopeAndStateTests.everyBody + [
                .impressionVerified(view), .impressionReported(skan), .updateVerified(update),
                .updateAttributed(
                    AttributedUpdate(conversionIdentifier: "c", update: update.update, time: 3, eventIdentifier: "e")),
                .conversionReported(
                    ConversionReport(
                        deviceIdentifier: "d", advertisedItemIdentifier: 1, conversionType: .reengagement, time: 3,
                        countryCode: "FR",
                        receivedAt: 4, conversionTag: "t", marketplaceIdentifier: "m")),
                .conversionAttributed(plans[4].attribution), .conversionAttributed(plans[1].attribution),
            ]
        return bodies.map { Envelope(time: -3, body: $0) }
    }

    @Test(arguments: envelopes) func envelopesInTheCompactFormAreRead(envelope: Envelope) throws {
        let bytes = try CompactCoding.encodeByCodable(envelope)
        #expect(try CompactCoding.decode(Envelope.self, from: bytes) == envelope)
        #expect(try Envelope.decode(bytes) == envelope)
        #expect(try Envelope.decode(envelope.encoded()) == envelope, "and its JSON")
    }

    /// Device states: empty; impressions of both interactions, an install, a settling conversion and a
    /// pending update (as `CompactCodingTests` builds it); attributed conversions with a tag and a horizon,
    /// and a pending activity.
    static var states: [DeviceAttributionState] {
        var states = [DeviceAttributionState()]
        var state = DeviceAttributionState()
        _ = state.record(F.impression("click", at: 1_000))
        var view = F.impression("view", type: .view, at: 2_000, reengagement: true)
        view.interaction = .view(begin: 1_000, end: 2_000)
        _ = state.record(view)
        state.installedAt = 5
        state.installCountry = "FR"
        state.settle(
            ConversionReport(
                deviceIdentifier: "d", advertisedItemIdentifier: F.app, conversionType: .download, time: 3, receivedAt: 4),
            conversionIdentifier: "settling", settlesAfter: 250)
        _ = state.receive(
            ValueUpdateReport(
                deviceIdentifier: "d", advertisedItemIdentifier: F.app, update: .init(fineConversionValue: 9), time: 9,
                receivedAt: 9))
        states.append(state)
        state.conversions = [
            ConversionRecord(conversionIdentifier: "c-1", conversionType: .download, time: 3),
            ConversionRecord(
                conversionIdentifier: "c-2", conversionType: .reengagement, time: 7, conversionTag: "t", settlesAfter: 9),
        ]
        state.pendingActivities = [
            ActivityReport(
                deviceIdentifier: "d", advertisedItemIdentifier: F.app, activity: Activity(sessions: 1), time: 10, receivedAt: 11)
        ]
        states.append(state)
        return states
    }

    @Test(arguments: states) func deviceStatesAsCodable(state: DeviceAttributionState) throws {
        let bytes = try CompactCoding.encodeByCodable(state)
        #expect(try CompactCoding.encodeByHand(state) == bytes)
        #expect(CompactCoding.decodeByHand(DeviceAttributionState.self, from: bytes) == state)
        #expect(try CompactCoding.decode(DeviceAttributionState.self, from: bytes) == state)
    }
}
