import Foundation
import Testing

@testable import AttributionModel

/// The stored-state codec (`CompactHandCoded`: postback plans, device states) against the `Codable`
/// form release 0.1.0 stored (`Release010CompactEncoder` and `Fixtures/stored-state-0.1.0.txt`): the
/// same bytes out, the same value back, and anything else refused as corrupt. Also 0.1.0's compact
/// envelopes, read through `Codable`.
@Suite("The stored-state codec: plans and device states")
struct StoredStateCodingTests {
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

    @Test(arguments: plans + [richPlan]) func sameBytesAsCodable(plan: PostbackPlan) throws {
        let stored = CompactCoding.encode(plan)
        #expect(try CompactCoding.decode(PostbackPlan.self, from: stored) == plan)
        // Dictionaries in key order here, in hash order through Codable: compared where there is one order.
        if plan != Self.richPlan { #expect(stored == (try CompactCoding.encodeByCodable(plan))) }
        #expect(try CompactCoding.decode(PostbackPlan.self, from: CompactCoding.encodeByCodable(plan)) == plan)
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

    /// The per-event members are read in the writer's order: another order, an unknown key (a newer
    /// writer's) or damage is refused, naming the type and where reading stopped, never read as a default.
    @Test func otherLayoutsAreRefused() throws {
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
        let reordered = try CompactCoding.encodeByCodable(Reordered(plan: plan))
        let error = try #require(throws: DecodingError.self) { try CompactCoding.decode(PostbackPlan.self, from: reordered) }
        guard case .dataCorrupted(let context) = error else { throw error }
        #expect(context.debugDescription.hasPrefix("not a stored PostbackPlan: unexpected layout at byte "))
        var extended = CompactCoding.encode(plan)
        let extra: [UInt8] = [2 * 5] + Array("later".utf8) + [CompactCoding.Tag.trueValue]
        extended.insert(contentsOf: extra, at: extended.count)
        let count = UInt32(extended.count - 7)
        for index in 0..<4 { extended[3 + index] = UInt8(truncatingIfNeeded: count >> (8 * index)) }
        #expect(throws: DecodingError.self) { try CompactCoding.decode(PostbackPlan.self, from: extended) }
        #expect(throws: DecodingError.self) { try CompactCoding.decode(DeviceAttributionState.self, from: extended) }
    }

    /// A length no buffer holds (a varint of 2⁶³ and more, in a damaged or hostile blob) is refused, not
    /// trapped on; so is a plan whose per-window arrays are not one entry per window.
    @Test func hostileLengthsAndShapesAreRefused() throws {
        func keyed(_ body: [UInt8]) -> [UInt8] {
            let count = UInt32(body.count)
            return [CompactCoding.Tag.keyed] + (0..<4).map { UInt8(truncatingIfNeeded: count >> (8 * $0)) } + body
        }
        func array(_ body: [UInt8]) -> [UInt8] {
            let count = UInt32(body.count)
            return [CompactCoding.Tag.array] + (0..<4).map { UInt8(truncatingIfNeeded: count >> (8 * $0)) } + body
        }
        let huge: [UInt8] = [CompactCoding.Tag.string] + Array(repeating: 0xFF, count: 9) + [0x01]
        // impressions (key 25) holding one impression whose device-identifier (key 6) claims 2⁶⁴ − 1 bytes.
        let state = [CompactCoding.magic, CompactCoding.version] + keyed([2 * 25 + 1] + array(keyed([2 * 6 + 1] + huge)))
        #expect(throws: DecodingError.self) { try CompactCoding.decode(DeviceAttributionState.self, from: state) }
        // An unknown key whose value claims as much, skipped by the Codable reader.
        struct Timed: Decodable { var time: Int64 }
        let skipped = [CompactCoding.magic, CompactCoding.version] + keyed([2, UInt8(ascii: "x")] + huge)
        #expect(throws: DecodingError.self) { try CompactCoding.decodeByCodable(Timed.self, from: skipped) }
        // A plan with no entry in windowsDone would index past it in the rules.
        var plan = Self.plans[0]
        plan.windowsDone = []
        #expect(throws: DecodingError.self) { try CompactCoding.decode(PostbackPlan.self, from: CompactCoding.encode(plan)) }
    }

    /// The rare members (a schema, totals, pending updates and activities) are read in any key order,
    /// each key once; an unknown key or a missing required one is refused.
    @Test func rareMembersInAnyOrder() throws {
        func read<T>(_ write: (inout CompactWriter) -> Void, _ read: (inout CompactReader) throws -> T) throws -> T {
            var writer = CompactWriter(bytes: [])
            write(&writer)
            return try writer.bytes.withUnsafeBufferPointer { buffer in
                var reader = CompactReader(buffer: buffer, position: 0)
                return try read(&reader)
            }
        }
        let backwards: (inout CompactWriter) -> Void = { writer in
            writer.keyed { writer in
                writer.field("lock", true)
                writer.field("coarse", CoarseConversionValue.high)
                writer.field("fine", 7)
            }
        }
        let reversed = try read(backwards) { try SchemaValue(reading: &$0) }
        #expect(reversed == SchemaValue(fine: 7, coarse: .high, lock: true))
        let missing: (inout CompactWriter) -> Void = { writer in
            writer.keyed { writer in
                writer.field("fine", 7)
                writer.field("coarse", CoarseConversionValue.high)
            }
        }
        #expect(throws: (any Error).self) { try read(missing) { try SchemaValue(reading: &$0) } }
        let twice: (inout CompactWriter) -> Void = { writer in
            writer.keyed { writer in
                writer.field("fine", 7)
                writer.field("fine", 8)
                writer.field("coarse", CoarseConversionValue.high)
                writer.field("lock", true)
            }
        }
        #expect(throws: (any Error).self) { try read(twice) { try SchemaValue(reading: &$0) } }
        let unknown: (inout CompactWriter) -> Void = { writer in
            writer.keyed { writer in
                writer.field("sessions", 1)
                writer.field("later", 1)
            }
        }
        #expect(throws: (any Error).self) { try read(unknown) { try Activity(reading: &$0) } }
    }

    /// What release 0.1.0 stored is read as the same state or plan: the fixture holds `states`,
    /// `richState`, `plans` and `richPlan`, in that order, as 0.1.0's `Codable` writer
    /// (`Release010CompactEncoder`) wrote them, dictionaries in the hash order of the run that wrote it.
    @Test func whatReleaseZeroOneStoredIsRead() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/stored-state-0.1.0.txt")
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map { line in
            let parts = line.split(separator: " ")
            let hex = Array(parts[1].utf8)
            let bytes = stride(from: 0, to: hex.count, by: 2).map {
                UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)!
            }
            return (kind: String(parts[0]), bytes: bytes)
        }
        let states = lines.filter { $0.kind == "state" }.map(\.bytes)
        let plans = lines.filter { $0.kind == "plan" }.map(\.bytes)
        try #require(states.count == Self.states.count + 1 && plans.count == Self.plans.count + 1)
        for (bytes, state) in zip(states, Self.states + [Self.richState]) {
            let read = try CompactCoding.decode(DeviceAttributionState.self, from: bytes)
            #expect(read == state)
            #expect(read == (try CompactCoding.decodeByCodable(DeviceAttributionState.self, from: bytes)))
        }
        for (bytes, plan) in zip(plans, Self.plans + [Self.richPlan]) {
            let read = try CompactCoding.decode(PostbackPlan.self, from: bytes)
            // 0.1.0's own reader agrees on every plan; prepared postbacks' identifiers and delays are
            // random per test run, so only plans without them equal today's samples.
            #expect(read == (try CompactCoding.decodeByCodable(PostbackPlan.self, from: bytes)))
            if plan.closed.allSatisfy({ $0 == nil }) { #expect(read == plan) }
        }
        #expect(plans.count > 4, "the random plans are not all the fixture holds")
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
        #expect(try CompactCoding.decodeByCodable(Envelope.self, from: bytes) == envelope)
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

    @Test(arguments: states + [richState]) func deviceStatesAsCodable(state: DeviceAttributionState) throws {
        let bytes = try CompactCoding.encodeByCodable(state)
        if state != Self.richState { #expect(CompactCoding.encode(state) == bytes) }
        #expect(try CompactCoding.decode(DeviceAttributionState.self, from: bytes) == state)
        #expect(try CompactCoding.decode(DeviceAttributionState.self, from: CompactCoding.encode(state)) == state)
    }
}

extension StoredStateCodingTests {
    /// A device state with every rarely used member set: pending updates in both shapes, with and without
    /// their optional members, and pending activities whose events and revenue hold several keys (one,
    /// `time`, a name the key table numbers).
    static var richState: DeviceAttributionState {
        var state = states[2]
        var full = ValueUpdateReport(
            deviceIdentifier: "d", advertisedItemIdentifier: F.app,
            update: .init(
                fineConversionValue: 63, coarseConversionValue: .high, lockPostback: true,
                conversionTypes: [.reengagement, .install], conversionTag: "tag-é"),
            time: 12, receivedAt: 13, skadnetworkShape: true)
        full.eventIdentifier = "e-1"
        state.pendingUpdates = [
            full,
            ValueUpdateReport(
                deviceIdentifier: "d", advertisedItemIdentifier: F.app, update: .init(fineConversionValue: 0), time: -1,
                receivedAt: 0),
        ]
        var activity = ActivityReport(
            deviceIdentifier: "d", advertisedItemIdentifier: F.app,
            activity: Activity(
                sessions: 2, events: ["level": 3, "purchase": 1, "time": 4],
                revenue: ["USD": Decimal(string: "9.99")!, "EUR": Decimal(string: "1.5")!]),
            time: 14, receivedAt: 15, conversionTag: "t")
        activity.eventIdentifier = "e-2"
        state.pendingActivities.append(activity)
        state.pendingActivities.append(
            ActivityReport(
                deviceIdentifier: "d", advertisedItemIdentifier: F.app, activity: Activity(events: ["x": 1]), time: 16,
                receivedAt: 17))
        return state
    }

    /// A plan of an app with a versioned schema using every member (conditions on sessions, events and
    /// revenue in several keys, locks, `allow-decrease`), totals in every window and values in some.
    static var richPlan: PostbackPlan {
        typealias Schema = ConversionValueSchema
        let schema = Schema(
            version: 3,
            windows: [
                .init(
                    window: 0,
                    rules: [
                        .init(
                            when: .init(
                                sessions: 1, events: ["level": 2, "purchase": 1],
                                revenue: ["USD": 20, "EUR": Decimal(string: "5.5")!]),
                            fine: 60, coarse: .high, lock: true),
                        .init(when: .init(), fine: 1, coarse: .low),
                    ], allowDecrease: true),
                .init(window: 1, rules: [.init(when: .init(sessions: 2), fine: 3, coarse: .medium, lock: false)]),
            ])
        var plan = PostbackPlan(attribution: F.attribution(), crowd: tier2, valueSchema: schema)
        plan.activityTotals = [
            ActivityTotals(
                sessions: 3, events: ["level": 2, "time": 1], revenue: ["USD": Decimal(string: "25.5")!, "JPY": 300]),
            ActivityTotals(sessions: 1),
            ActivityTotals(),
        ]
        plan.schemaValues = [
            SchemaValue(fine: 60, coarse: .high, lock: true), nil, SchemaValue(fine: 0, coarse: .low, lock: false),
        ]
        return plan
    }
}
