import AttributionModel
import Foundation
import TestSupport

/// Runs a `Scenario` through the stages' own steps (`WinnerStep`, `SchedulerStep`) under a virtual
/// clock, as Chromium's interop runner drives the real attribution manager: the runner only stands in
/// for Redis and the streams. It keeps what the services keep (device states and re-engagement
/// histories, plan states, timers, held postbacks), hands every message to the step the pipeline would,
/// and routes each step's outputs on. It writes no rule and no orchestration of its own.
///
/// Choices (documented in `docs/concepts/attribution-rules.md`):
/// - Events are delivered in `at` order (ties: file order), or in `arrival` order when given; the rules
///   use the events' own times either way. With `arrival` all events arrive within one conversion settle
///   time: conversions settle (the step holds them) and are attributed once every event has arrived, in
///   arrival order. Without it the settle time is 0 and conversions are attributed as they arrive.
/// - Window-end timers (no close grace here) fire in time order, interleaved with events; a timer due at
///   exactly an event's time fires after that event (timers fire only when strictly earlier than the
///   next event). The step's `now` is the event's or the timer's time.
/// - Every crowd holds the scenario's tier exactly (10, 100, 1000 conversions: the default thresholds),
///   unless the scenario gives `thresholds`: then the scenario's own conversions are counted.
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
        /// Messages a step left pending: the pipeline would retry them; a scenario never should.
        var retried: [String] = []
        /// Updates no conversion took: ignored (SKAdNetwork's shape) and refused.
        var ignoredUpdates = 0
        var refusedUpdates = 0
        /// Per re-engagement given a `url`: the open URL ingest answers with; per conversion tag, the
        /// outcome attribution-winner recorded.
        var openURLs: [String: String] = [:]
        var outcomes: [String: ConversionOutcome] = [:]
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

    /// Conversions counted in each crowd so that a conversion's crowd (itself included) reaches `tier`
    /// under the default thresholds.
    static func crowdCount(tier: Int) -> Int {
        let thresholds = CrowdTierThresholds()
        return [0, thresholds.tier1, thresholds.tier2, thresholds.tier3][min(3, max(0, tier))] - 1
    }

    private struct Timer {
        var at: Milliseconds
        var sequence: Int
        var message: Envelope
    }

    let scenario: Scenario
    private let winner: WinnerStep
    private let settled: WinnerStep
    private let scheduler: SchedulerStep
    /// With the scenario's `thresholds`: every crowd's day counts, as the scheduler's hashes hold them.
    private var crowds: [Crowd: [Int64: Int]] = [:]
    // What Redis holds for the services.
    private var devices: [WinnerStep.Scope: DeviceAttributionState] = [:]
    private var reengagements: [String: [Milliseconds]] = [:]
    private var plans: [String: SchedulerStep.PlanState] = [:]
    /// Plans' expiry and their finished markers' (as Redis expires the scheduler's keys).
    private var expiresAt: [String: Milliseconds] = [:]
    private var markerExpiresAt: [String: Milliseconds] = [:]
    private var timers: [Timer] = []
    private var timerSequence = 0
    private var settling: [Envelope] = []
    private var conversionTimes: [String: Milliseconds] = [:]
    private var now: Milliseconds = 0
    private var generator: SplitMix64
    private var run = Run()

    init(_ scenario: Scenario, seed: UInt64 = 2_024) {
        self.scenario = scenario
        self.generator = SplitMix64(seed: seed)
        winner = WinnerStep(policy: Self.policy, input: .verified, settleMilliseconds: scenario.arrival == nil ? 0 : 1)
        settled = WinnerStep(policy: Self.policy, input: .settled, settleMilliseconds: 0)
        let thresholds = scenario.thresholds.flatMap {
            $0.count == 3 ? CrowdTierThresholds(tier1: $0[0], tier2: $0[1], tier3: $0[2]) : nil
        }
        scheduler = SchedulerStep(
            policy: Self.policy, thresholds: thresholds ?? CrowdTierThresholds(), windowCloseGraceMilliseconds: 0,
            identifiers: Fixture.identifiers)
    }

    /// The delivery order: `arrival` if given, else by `at` with ties in file order.
    static func deliveryOrder(_ scenario: Scenario) -> [Int] {
        if let arrival = scenario.arrival { return arrival }
        return scenario.events.indices.sorted { a, b in
            scenario.events[a].at != scenario.events[b].at ? scenario.events[a].at < scenario.events[b].at : a < b
        }
    }

    mutating func execute() -> Run {
        for index in Self.deliveryOrder(scenario) {
            let message = verified(scenario.events[index], index: index)
            fireTimers(before: message.time)
            now = message.time
            attribute(message, with: winner)
        }
        // Conversions the step held to settle, attributed once every event has arrived.
        for message in settling {
            fireTimers(before: message.time)
            now = message.time
            attribute(message, with: settled)
        }
        fireTimers(before: .max)
        return run
    }

    private mutating func fireTimers(before time: Milliseconds) {
        while let next = timers.filter({ $0.at < time }).min(by: { ($0.at, $0.sequence) < ($1.at, $1.sequence) }) {
            timers.removeAll { $0.sequence == next.sequence }
            now = next.at
            schedule(next.message)
        }
    }

    /// attribution-winner's step on one message; its outputs go on to the scheduler's.
    private mutating func attribute(_ message: Envelope, with step: WinnerStep) {
        let scope = WinnerStep.scope(of: message)!
        let device = WinnerStep.reengagementDevice(of: message)
        switch step.step(
            devices[scope] ?? DeviceAttributionState(), message: message,
            reengagements: device.flatMap { reengagements[$0] } ?? [], now: now)
        {
        case .retry(let reason):
            run.retried.append("\(message.type.rawValue) \(message.id): \(reason)")
        case .done(let effects):
            devices[scope] = effects.state
            if let device, let record = effects.reengagement { record.apply(to: &reengagements[device, default: []]) }
            if let settle = effects.settle { settling.append(settle.message) }
            if let refusal = effects.refusal { run.refusals[message.id] = refusal.reason }
            if let (tag, outcome) = effects.outcome { run.outcomes[tag] = outcome }
            run.ignoredUpdates += effects.counts.filter { $0 == .skadnetworkUpdateIgnored }.count
            run.refusedUpdates += effects.rejections.filter { $0.rejection.reason == .conversionNotFound }.count
            for output in effects.outputs { schedule(output) }
        }
    }

    /// The scheduler's step on one message; held postbacks are collected, swaps applied while still held.
    private mutating func schedule(_ message: Envelope) {
        let id = SchedulerStep.conversionIdentifier(of: message)!
        var crowd = CrowdCounts()
        if case .conversionAttributed(let attribution) = message.body {
            run.attributions[id] = attribution
            conversionTimes[id] = attribution.conversionTime
            let day = CrowdDayBuckets.day(of: attribution.conversionTime, policy: Self.policy)
            for member in Crowd.all(for: attribution) {
                crowd.read[member] =
                    scenario.thresholds == nil ? [day: Self.crowdCount(tier: scenario.tier ?? 3)] : crowds[member] ?? [:]
            }
        }
        if let expiry = expiresAt[id], expiry <= now {
            plans[id] = markerExpiresAt[id].map { $0 > now } == true ? .finished : .absent
            expiresAt[id] = nil
        }
        switch scheduler.step(plans[id] ?? .absent, message: message, crowd: &crowd, schema: nil, now: now) {
        case .retry(let reason):
            run.retried.append("\(message.type.rawValue) \(message.id): \(reason)")
        case .done(let effects):
            if scenario.thresholds != nil, let increment = effects.crowd {
                for member in increment.crowds { crowds[member] = increment.applied(to: crowds[member] ?? [:]) }
            }
            if let store = effects.store {
                plans[id] = store
                expiresAt[id] = effects.expiresAt
                if let marker = effects.markerExpiresAt { markerExpiresAt[id] = marker }
            }
            for timer in effects.timers {
                timers.append(Timer(at: timer.dueAt, sequence: timerSequence, message: timer.message))
                timerSequence += 1
            }
            let preparedAt = max(message.time, conversionTimes[id] ?? message.time) - Self.base
            for held in effects.held {
                guard let old = held.replacing else {
                    run.postbacks.append(SentPostback(conversion: id, preparedAt: preparedAt, held: held))
                    continue
                }
                // A swap finds its postback only while it is still held.
                if old.dueAt > now, let index = run.postbacks.firstIndex(where: { $0.held.order == old.order }) {
                    run.postbacks[index].held = held
                }
            }
        }
    }

    /// The message the verifier would pass on for a scenario event.
    private mutating func verified(_ event: ScenarioEvent, index: Int) -> Envelope {
        let device = event.device ?? "device"
        let time = Self.base + event.at
        if let impression = event.impression {
            let interaction: Interaction =
                switch (impression.interaction, impression.oneCall ?? false) {
                case (.click, _): .click(at: time, loadedAt: time - 1_000)
                case (.view, false): .view(begin: time - 3_000, end: time)
                case (.view, true): .oneCallView(at: time)
                }
            let verified = VerifiedImpression(
                deviceIdentifier: device,
                payload: ImpressionPayload(
                    impressionIdentifier: Self.impressionIdentifier(impression.id),
                    adNetworkIdentifier: AdNetworkIdentifier(impression.network)!,
                    advertisedItemIdentifier: Self.advertisedApp,
                    publisherItemIdentifier: impression.publisher ?? 5_838_492,
                    sourceIdentifier: impression.source ?? 5239, timestamp: time - (impression.createdBefore ?? 2_000),
                    eligibleForReengagement: impression.eligibleForReengagement),
                interaction: interaction, kind: impression.kind ?? .adAttributionKit)
            return Envelope(id: "event-\(index)", time: time, body: .impressionVerified(verified))
        } else if let conversion = event.conversion {
            // Ingest's part: the URL is checked and opened before the conversion goes on.
            if let url = conversion.url, let checked = try? ReengagementOpenURL.validate(url) {
                run.openURLs[conversion.id] = ReengagementOpenURL.opening(checked, tag: Self.tag(of: conversion.id))
            }
            let report = ConversionReport(
                deviceIdentifier: device, advertisedItemIdentifier: Self.advertisedApp, conversionType: conversion.type,
                time: time, countryCode: conversion.country == "absent" ? nil : conversion.country ?? "US", receivedAt: time,
                conversionTag: conversion.type == .reengagement ? Self.tag(of: conversion.id) : nil,
                marketplaceIdentifier: conversion.marketplace)
            let app = (scenario.app ?? IngestRequests.AdvertisedApp()).configuration(itemIdentifier: Self.advertisedApp)
            return Envelope(
                id: conversion.id, time: time, body: .conversionVerified(VerifiedConversion(report: report, app: app)))
        } else {
            let update = event.update!
            let report = ValueUpdateReport(
                deviceIdentifier: device, advertisedItemIdentifier: Self.advertisedApp,
                update: PostbackUpdate(
                    fineConversionValue: update.fine, coarseConversionValue: update.coarse,
                    lockPostback: update.lock ?? false, conversionTypes: update.types,
                    conversionTag: update.tagOf.map(Self.tag(of:))),
                time: time, receivedAt: time, skadnetworkShape: update.skadnetwork == true ? true : nil)
            return Envelope(id: "event-\(index)", time: time, body: .updateVerified(report))
        }
    }
}

extension ScenarioRuleRunner {
    /// Every difference between the run and the scenario's expectations, each naming the scenario.
    static func differences(name: String, scenario: Scenario, run: Run) -> [String] {
        var problems: [String] = []
        func report(_ text: String) { problems.append("\(name) [\(scenario.rule)]: \(text)") }
        for retried in run.retried { report("a step left a message pending: \(retried)") }
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

        // Updates no conversion took, when the scenario counts them.
        if let expected = scenario.expected.ignoredUpdates, expected != run.ignoredUpdates {
            report("\(run.ignoredUpdates) updates ignored for want of a conversion, expected \(expected)")
        }
        if let expected = scenario.expected.refusedUpdates, expected != run.refusedUpdates {
            report("\(run.refusedUpdates) updates refused conversion-not-found, expected \(expected)")
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

        // Re-engagements' answers: the open URL whatever the outcome, and the outcome.
        for expected in scenario.expected.openings ?? [] {
            let url = expected.url(tag: tag(of: expected.conversion))
            if run.openURLs[expected.conversion] != url {
                report(
                    "conversion \(expected.conversion): open URL \(run.openURLs[expected.conversion] ?? "none"), expected \(url)")
            }
            let outcome = run.outcomes[tag(of: expected.conversion)]
            if outcome?.conversion != expected.outcome || outcome?.reason != expected.reason {
                report(
                    "conversion \(expected.conversion): outcome \(outcome?.recorded ?? "none recorded"), expected "
                        + "\(expected.outcome)\(expected.reason.map { " \($0)" } ?? "")")
            }
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
            if let marketplace = expected.marketplace, order.payload.marketplaceIdentifier != marketplace {
                report("\(label): marketplace \(describe(order.payload.marketplaceIdentifier)), expected \(marketplace)")
            }
            if let mismatch = expected.countryMismatch(order.countryCode) { report("\(label): \(mismatch)") }
            if actual.preparedAt != expected.preparedAt {
                report("\(label): prepared at \(actual.preparedAt), expected \(expected.preparedAt)")
            }
            let delay = actual.held.dueAt - base - expected.preparedAt
            if let fixed = expected.delay {
                if delay != policy.milliseconds(.milliseconds(fixed)) {
                    report("\(label): due \(delay) ms after preparedAt, expected exactly \(fixed)")
                }
            } else {
                let range = PostbackDelay.range(sequenceIndex: expected.window, development: order.isDevelopment)
                let low = policy.milliseconds(range.lowerBound)
                let high = policy.milliseconds(range.upperBound)
                if !(low...high).contains(delay) {
                    report("\(label): due \(delay) ms after preparedAt, outside \(low)...\(high)")
                }
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
