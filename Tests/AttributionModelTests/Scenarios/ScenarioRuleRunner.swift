import AttributionModel
import Foundation
import TestSupport

/// Runs a `Scenario` against the model's pure rules under a virtual clock, exactly as the services drive
/// them: attribution-winner keeps a `DeviceAttributionState` per device and app plus each device's
/// re-engagement times; the scheduler keeps a `PostbackPlan` per conversion, fires window-end timers,
/// applies routed updates and supersessions, and holds the postbacks the plans prepare.
///
/// Choices (documented in `docs/attribution-rules.md`):
/// - Events are delivered in `at` order (ties: file order), or in `arrival` order when given; the rules
///   use the events' own times either way. With `arrival` all events arrive within one conversion settle
///   time, so conversions are attributed after every event has arrived (in arrival order).
/// - Window-end timers fire in time order, interleaved with events; a timer due at exactly an event's
///   time fires after that event (timers fire only when strictly earlier than the next event).
/// - Scenario impression names map to ids that sort like the names: the name's UTF-8 bytes (at most
///   16), zero-padded to 16 bytes, written as a lowercase UUID. Ties on time are thus broken by name.
/// - Conversion ids are the scenario names; a re-engagement's conversion tag is `tag-<name>`.
struct ScenarioRuleRunner {
    static let base: Milliseconds = 1_700_000_000_000
    static let advertisedApp: ItemIdentifier = 1_108_187_390
    static let policy = TimePolicy.realTime

    /// One postback the plans prepared, with what the runner knows about it.
    struct SentPostback {
        var conversion: String
        var preparedAt: Milliseconds  // virtual (scenario) time
        var held: HeldPostback
    }

    struct Run {
        var attributions: [String: Attribution] = [:]
        var refusals: [String: ConversionEligibility.Refusal] = [:]
        var postbacks: [SentPostback] = []
    }

    /// The UUID-shaped id of a scenario impression name, ordered like the name.
    static func impressionIdentifier(_ name: String) -> String {
        let bytes = Array(name.utf8.prefix(16)) + Array(repeating: 0, count: max(0, 16 - name.utf8.count))
        let hex = bytes.map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }
        return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(separator: "-")
    }

    static func tag(of conversion: String) -> String { "tag-\(conversion)" }

    static func crowd(tier: Int) -> CrowdAssessment {
        switch tier {
        case 3: CrowdAssessment(tier: .three, sourceIdentifierDigits: 4, countryIsTierThree: true)
        case 2: CrowdAssessment(tier: .two, sourceIdentifierDigits: 4, countryIsTierThree: false)
        default: CrowdAssessment(tier: CrowdTier(rawValue: tier), sourceIdentifierDigits: 2, countryIsTierThree: false)
        }
    }

    private struct Timer {
        var at: Milliseconds
        var sequence: Int
        var conversion: String
        var window: Int
    }

    let scenario: Scenario
    private var devices: [String: DeviceAttributionState] = [:]
    private var reengagements: [String: [Milliseconds]] = [:]
    private var plans: [String: PostbackPlan] = [:]
    private var timers: [Timer] = []
    private var timerSequence = 0
    private var generator: SplitMix64
    private var run = Run()

    init(_ scenario: Scenario, seed: UInt64 = 2_024) {
        self.scenario = scenario
        self.generator = SplitMix64(seed: seed)
    }

    /// The delivery order: `arrival` if given, else by `at` with ties in file order.
    static func deliveryOrder(_ scenario: Scenario) -> [Int] {
        if let arrival = scenario.arrival { return arrival }
        return scenario.events.indices.sorted { a, b in
            scenario.events[a].at != scenario.events[b].at ? scenario.events[a].at < scenario.events[b].at : a < b
        }
    }

    mutating func execute() -> Run {
        // With `arrival`, every event reaches attribution-winner within one conversion settle time: the
        // conversions are attributed once all of them have arrived, in arrival order.
        var settling: [ScenarioEvent] = []
        for index in Self.deliveryOrder(scenario) {
            let event = scenario.events[index]
            if scenario.arrival != nil, let conversion = event.conversion {
                let device = event.device ?? "device"
                devices[device, default: DeviceAttributionState()].settle(
                    report(conversion, device: device, time: Self.base + event.at), conversionIdentifier: conversion.id)
                settling.append(event)
                continue
            }
            fireTimers(before: Self.base + event.at)
            deliver(event)
        }
        for event in settling {
            fireTimers(before: Self.base + event.at)
            deliver(event)
        }
        fireTimers(before: .max)
        return run
    }

    private mutating func fireTimers(before time: Milliseconds) {
        while let next = timers.filter({ $0.at < time }).min(by: { ($0.at, $0.sequence) < ($1.at, $1.sequence) }) {
            timers.removeAll { $0.sequence == next.sequence }
            guard var plan = plans[next.conversion] else { continue }
            let held = plan.closeWindow(next.window, policy: Self.policy, using: &generator)
            plans[next.conversion] = plan
            collect(held, conversion: next.conversion, preparedAt: next.at)
        }
    }

    private mutating func collect(_ held: [HeldPostback], conversion: String, preparedAt: Milliseconds) {
        run.postbacks += held.map { SentPostback(conversion: conversion, preparedAt: preparedAt - Self.base, held: $0) }
    }

    private mutating func deliver(_ event: ScenarioEvent) {
        let device = event.device ?? "device"
        let time = Self.base + event.at
        var state = devices[device] ?? DeviceAttributionState()
        defer { devices[device] = state }
        if let impression = event.impression {
            let interaction: Interaction =
                impression.interaction == .click
                ? .click(at: time, loadedAt: time - 1_000) : .view(begin: time - 3_000, end: time)
            state.record(
                VerifiedImpression(
                    deviceIdentifier: device,
                    payload: ImpressionPayload(
                        impressionIdentifier: Self.impressionIdentifier(impression.id),
                        adNetworkIdentifier: AdNetworkIdentifier(impression.network)!,
                        advertisedItemIdentifier: Self.advertisedApp,
                        publisherItemIdentifier: impression.publisher ?? 5_838_492,
                        sourceIdentifier: impression.source ?? 5239, timestamp: time - (impression.createdBefore ?? 2_000),
                        eligibleForReengagement: impression.eligibleForReengagement),
                    interaction: interaction, kind: impression.kind ?? .adAttributionKit))
        } else if let conversion = event.conversion {
            let report = report(conversion, device: device, time: time)
            let app = (scenario.app ?? IngestRequests.AdvertisedApp()).configuration(itemIdentifier: Self.advertisedApp)
            switch state.attribute(
                VerifiedConversion(report: report, app: app), conversionIdentifier: conversion.id,
                deviceReengagements: reengagements[device] ?? [], policy: Self.policy)
            {
            case .failure(let refusal):
                run.refusals[conversion.id] = refusal
                for update in state.routePending() { apply(update) }
            case .success(let outcome):
                if conversion.type == .reengagement { reengagements[device, default: []].append(time) }
                schedule(outcome.attribution)
                for update in outcome.updates { apply(update) }
                for superseded in outcome.superseded {
                    guard var plan = plans[superseded] else { continue }
                    let held = plan.supersede(at: time, policy: Self.policy, using: &generator)
                    plans[superseded] = plan
                    collect(held, conversion: superseded, preparedAt: max(time, plan.attribution.conversionTime))
                }
            }
        } else if let update = event.update {
            let report = ValueUpdateReport(
                deviceIdentifier: device, advertisedItemIdentifier: Self.advertisedApp,
                update: PostbackUpdate(
                    fineConversionValue: update.fine, coarseConversionValue: update.coarse,
                    lockPostback: update.lock ?? false, conversionTypes: update.types,
                    conversionTag: update.tagOf.map(Self.tag(of:))),
                time: time, receivedAt: time)
            if let routed = state.receive(report) { apply(routed) }
        }
    }

    private func report(_ conversion: ScenarioConversion, device: String, time: Milliseconds) -> ConversionReport {
        ConversionReport(
            deviceIdentifier: device, advertisedItemIdentifier: Self.advertisedApp, conversionType: conversion.type,
            time: time, countryCode: conversion.country ?? "US", receivedAt: time,
            conversionTag: conversion.type == .reengagement ? Self.tag(of: conversion.id) : nil)
    }

    private mutating func schedule(_ attribution: Attribution) {
        let plan = PostbackPlan(attribution: attribution, crowd: Self.crowd(tier: scenario.tier ?? 3))
        plans[attribution.conversionIdentifier] = plan
        run.attributions[attribution.conversionIdentifier] = attribution
        for (window, at) in plan.windowEnds(policy: Self.policy) {
            timers.append(Timer(at: at, sequence: timerSequence, conversion: attribution.conversionIdentifier, window: window))
            timerSequence += 1
        }
    }

    private mutating func apply(_ update: AttributedUpdate) {
        guard var plan = plans[update.conversionIdentifier] else { return }
        let held = plan.apply(update, policy: Self.policy, using: &generator)
        plans[update.conversionIdentifier] = plan
        collect(
            held, conversion: update.conversionIdentifier, preparedAt: max(update.time, plan.attribution.conversionTime))
    }
}

extension ScenarioRuleRunner {
    /// Every difference between the run and the scenario's expectations, each naming the scenario.
    static func differences(name: String, scenario: Scenario, run: Run) -> [String] {
        var problems: [String] = []
        func report(_ text: String) { problems.append("\(name) [\(scenario.rule)]: \(text)") }
        var impressions: [String: ScenarioImpression] = [:]
        var nameOfIdentifier: [String: String] = [:]
        for event in scenario.events {
            guard let impression = event.impression else { continue }
            impressions[impression.id] = impression
            nameOfIdentifier[impressionIdentifier(impression.id)] = impression.id
        }
        var conversionTypes: [String: ConversionType] = [:]
        for event in scenario.events { if let conversion = event.conversion { conversionTypes[conversion.id] = conversion.type } }
        func named(_ impression: AttributedImpression) -> String {
            nameOfIdentifier[impression.impressionIdentifier] ?? impression.impressionIdentifier
        }

        // Attributions: winner and non-winners (in ranking order) exactly; no other conversion attributed.
        let expectedAttributions = Dictionary(
            scenario.expected.attributions.map { ($0.conversion, $0) }, uniquingKeysWith: { first, _ in first })
        for (conversion, expected) in expectedAttributions.sorted(by: { $0.key < $1.key }) {
            guard let actual = run.attributions[conversion] else {
                let why = run.refusals[conversion].map { "refused (\($0.rawValue))" } ?? "never seen"
                report("conversion \(conversion) should be attributed to \(expected.winner) but was \(why)")
                continue
            }
            if named(actual.winner) != expected.winner {
                report("conversion \(conversion): winner \(named(actual.winner)), expected \(expected.winner)")
            }
            let nonWinners = actual.nonWinners.map(named)
            if nonWinners != (expected.nonWinners ?? []) {
                report("conversion \(conversion): non-winners \(nonWinners), expected \(expected.nonWinners ?? [])")
            }
        }
        for conversion in run.attributions.keys.sorted() where expectedAttributions[conversion] == nil {
            report("conversion \(conversion) was attributed to \(named(run.attributions[conversion]!.winner)) unexpectedly")
        }

        // Refusals, with their reasons.
        let expectedRefusals = Dictionary(
            (scenario.expected.refusals ?? []).map { ($0.conversion, $0.reason) }, uniquingKeysWith: { first, _ in first })
        for (conversion, reason) in expectedRefusals.sorted(by: { $0.key < $1.key })
        where run.refusals[conversion]?.rawValue != reason {
            report(
                "conversion \(conversion) should be refused (\(reason)) but was "
                    + (run.refusals[conversion].map { "refused (\($0.rawValue))" } ?? "attributed"))
        }
        for (conversion, refusal) in run.refusals.sorted(by: { $0.key < $1.key }) where expectedRefusals[conversion] == nil {
            report("conversion \(conversion) was refused unexpectedly (\(refusal.rawValue))")
        }

        // Postbacks: a multiset matched on (conversion, network, did-win, window).
        var unmatched = Array(run.postbacks.indices)
        for expected in scenario.expected.postbacks {
            let label =
                "postback \(expected.conversion)/\(expected.impression)/window \(expected.window)/didWin \(expected.didWin)"
            guard let impression = impressions[expected.impression] else {
                report("\(label) names an unknown impression")
                continue
            }
            guard
                let position = unmatched.firstIndex(where: { index in
                    let actual = run.postbacks[index]
                    return actual.conversion == expected.conversion
                        && actual.held.order.payload.adNetworkIdentifier.rawValue == impression.network
                        && actual.held.order.payload.didWin == expected.didWin
                        && actual.held.order.payload.postbackSequenceIndex == expected.window
                })
            else {
                report("\(label) was not sent")
                continue
            }
            let actual = run.postbacks[unmatched.remove(at: position)]
            let order = actual.held.order
            if order.conversionValue != expected.fine {
                report("\(label): fine \(describe(order.conversionValue)), expected \(describe(expected.fine))")
            }
            if order.coarseConversionValue != expected.coarse {
                report(
                    "\(label): coarse \(describe(order.coarseConversionValue?.rawValue)), "
                        + "expected \(describe(expected.coarse?.rawValue))")
            }
            let source = order.payload.sourceIdentifier
            if let digits = expected.sourceDigits, source.count != digits {
                report("\(label): source id \"\(source)\" has \(source.count) digits, expected \(digits)")
            }
            if (2...4).contains(source.count),
                source != SourceIdentifierTruncation.truncate(impression.source ?? 5239, digits: source.count)
            {
                report("\(label): source id \"\(source)\" is not \(expected.impression)'s")
            }
            if let type = conversionTypes[expected.conversion], order.payload.conversionType != type {
                report("\(label): conversion-type \(order.payload.conversionType.rawValue), expected \(type.rawValue)")
            }
            if (order.impressionKind ?? .adAttributionKit) != (impression.kind ?? .adAttributionKit) {
                report("\(label): a postback for a \(describe(order.impressionKind?.rawValue)) impression")
            }
            if order.adInteractionType != impression.interaction {
                report("\(label): interaction \(order.adInteractionType.rawValue), expected \(impression.interaction.rawValue)")
            }
            if actual.preparedAt != expected.preparedAt {
                report("\(label): prepared at \(actual.preparedAt), expected \(expected.preparedAt)")
            }
            let delay = actual.held.dueAt - base - expected.preparedAt
            let range = PostbackDelay.range(sequenceIndex: expected.window, development: order.isDevelopment)
            let low = policy.milliseconds(range.lowerBound)
            let high = policy.milliseconds(range.upperBound)
            if !(low...high).contains(delay) {
                report("\(label): due \(delay) ms after preparedAt, outside \(low)...\(high)")
            }
        }
        for index in unmatched {
            let actual = run.postbacks[index]
            let payload = actual.held.order.payload
            report(
                "extra postback \(actual.conversion)/\(payload.adNetworkIdentifier)/window \(payload.postbackSequenceIndex)"
                    + "/didWin \(payload.didWin) (fine \(describe(actual.held.order.conversionValue)), "
                    + "coarse \(describe(actual.held.order.coarseConversionValue?.rawValue)), prepared at \(actual.preparedAt))")
        }
        return problems
    }

    private static func describe<T>(_ value: T?) -> String { value.map { "\($0)" } ?? "none" }
}
