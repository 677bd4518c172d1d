import AttributionModel
import Testing

/// attribution-winner's step: settling, attributing, refusing with routed updates, the cap history.
@Suite struct WinnerStepTests {
    typealias F = Fixture
    static let now: Milliseconds = 1_700_000_000_000

    static func conversion(_ type: ConversionType, at time: Milliseconds, device: String = "device-1") -> Envelope {
        let report = ConversionReport(
            deviceIdentifier: device, advertisedItemIdentifier: F.app, conversionType: type, time: time, countryCode: "US",
            receivedAt: time, conversionTag: type == .reengagement ? "tag" : nil)
        return Envelope(
            id: "conversion-\(time)", time: time,
            body: .conversionVerified(VerifiedConversion(report: report, app: AdvertisedAppConfiguration(itemIdentifier: F.app))))
    }

    func effects(_ outcome: StepOutcome<WinnerStep.Effects>) throws -> WinnerStep.Effects {
        guard case .done(let effects) = outcome else { throw StepFailure("expected effects, got \(outcome)") }
        return effects
    }

    @Test func aConversionSettlesFirstThenIsAttributed() throws {
        let settling = WinnerStep(policy: .realTime, input: .verified, settleMilliseconds: 2_000)
        var state = DeviceAttributionState()
        state.record(F.impression("i", at: Self.now - F.hour))
        let message = Self.conversion(.download, at: Self.now)
        let held = try effects(settling.step(state, message: message, reengagements: [], now: 5))
        #expect(held.settle?.message == message && held.settle?.dueAt == 2_005)
        #expect(held.outputs.isEmpty && held.state.settling.count == 1)

        let settled = WinnerStep(policy: .realTime, input: .settled, settleMilliseconds: 2_000)
        let attributed = try effects(settled.step(held.state, message: message, reengagements: [], now: 2_005))
        #expect(attributed.settle == nil && attributed.state.settling.isEmpty)
        guard case .conversionAttributed(let attribution)? = attributed.outputs.first?.body else {
            throw StepFailure("no attribution")
        }
        #expect(attribution.conversionIdentifier == message.id && attribution.winner.impressionIdentifier == "i")
        #expect(attributed.counts == [.conversion(.attributed)])
        #expect(attributed.keepStateFor == Retention.deviceState(.realTime))
    }

    /// The verifier may write a conversion twice (a replica's pending entry claimed by another while the
    /// first still worked on it): once attributed, the conversion read again, from `verified` or from a
    /// second settle timer, changes nothing. Attributed again it would supersede itself, its own postbacks
    /// closed unsent (seen in a network fault run).
    @Test(arguments: [WinnerStep.Input.verified, .settled])
    func aConversionDeliveredAgainAfterItsAttributionIsIgnored(input: WinnerStep.Input) throws {
        var state = DeviceAttributionState()
        state.record(F.impression("i", at: Self.now - 2 * F.hour))
        state.record(F.impression("j", at: Self.now - F.hour))
        let message = Self.conversion(.download, at: Self.now)
        let settled = WinnerStep(policy: .realTime, input: .settled, settleMilliseconds: 2_000)
        let attributed = try effects(settled.step(state, message: message, reengagements: [], now: 5))
        #expect(attributed.counts == [.conversion(.attributed)])

        let again = WinnerStep(policy: .realTime, input: input, settleMilliseconds: 2_000)
        let redelivered = try effects(again.step(attributed.state, message: message, reengagements: [], now: 9))
        #expect(redelivered.outputs.isEmpty && redelivered.settle == nil)
        #expect(redelivered.counts == [.redeliveredConversion])
        #expect(redelivered.state == attributed.state)
    }

    /// An install with an impression an hour before it, read by the settling step (2 s) long after the
    /// verifier wrote it (at 10,000): the horizon counts from the writing, so it settles after 12,000.
    func settlingInstall() throws -> (message: Envelope, held: WinnerStep.Effects) {
        let settling = WinnerStep(policy: .realTime, input: .verified, settleMilliseconds: 2_000)
        var state = DeviceAttributionState()
        state.record(F.impression("i", at: Self.now - F.hour))
        let message = Self.conversion(.download, at: Self.now)
        let held = try effects(
            settling.step(state, message: message, reengagements: [], now: 9_000_000, verified: .writtenAt(10_000)))
        return (message, held)
    }

    /// A settled conversion waits while attribution-winner has not finished `verified` up to where the
    /// verifier wrote it plus the settle time: an impression written just after it, read late because
    /// the winner is behind, still competes. The wait ends when a waiting update would be refused
    /// (`DeviceStateLimits.pendingKept`).
    @Test(arguments: [
        // (read through, now, waits)
        (nil, 12_000, false) as (Milliseconds?, Milliseconds, Bool),  // no position known (old records, the rule runner)
        (11_999, 12_000, true),  // written at 10,000 + 2,000 settle: not read that far yet
        (12_000, 12_000, false),  // read through the horizon
        (5_000, 12_000 + DeviceStateLimits.pendingKept(.realTime) - 1, true),
        (5_000, 12_000 + DeviceStateLimits.pendingKept(.realTime), false),  // waited as long as a waiting update is kept
    ])
    func aSettledConversionWaitsUntilVerifiedIsReadPastIt(readThrough: Milliseconds?, now: Milliseconds, waits: Bool) throws {
        let (message, held) = try settlingInstall()
        #expect(held.state.settling.first?.settlesAfter == 12_000 && held.settle?.dueAt == 9_002_000)

        let settled = WinnerStep(policy: .realTime, input: .settled, settleMilliseconds: 2_000)
        let outcome = try effects(
            settled.step(
                held.state, message: message, reengagements: [], now: now, verified: readThrough.map { .readThrough($0) }))
        if waits {
            #expect(outcome.outputs.isEmpty && outcome.state.settling.count == 1)
            // Looked at again after the unread span of `verified`, within 10 ms … 1 s.
            #expect(
                outcome.settle?.message == message
                    && outcome.settle?.dueAt == now + min(max(10, 12_000 - (readThrough ?? 0)), 1_000))
            #expect(outcome.counts == [.settleExtended])
        } else {
            #expect(outcome.settle == nil && outcome.state.settling.isEmpty)
            #expect(outcome.counts == [.conversion(.attributed)])
        }
    }

    /// `verified` read past the horizon is not enough while the verifier holds an event ingest took
    /// before the conversion (an impression pending on a verifier replica that died, or just claimed by
    /// another): the conversion waits for it, under the same bound.
    @Test(arguments: [
        // (the verifier finished `events` through, now, waits)
        (nil, 12_000, false) as (Milliseconds?, Milliseconds, Bool),  // not known: not waited for
        (Self.now - 1, 12_000, true),  // an event taken just before the conversion is unfinished
        (Self.now, 12_000, false),
        (Self.now - 1, 12_000 + DeviceStateLimits.pendingKept(.realTime), false),  // the same bound
    ])
    func aSettledConversionWaitsForEventsTheVerifierHasNotFinished(
        verifierThrough: Milliseconds?, now: Milliseconds, waits: Bool
    ) throws {
        let (message, held) = try settlingInstall()
        let settled = WinnerStep(policy: .realTime, input: .settled, settleMilliseconds: 2_000)
        let outcome = try effects(
            settled.step(
                held.state, message: message, reengagements: [], now: now,
                verified: .readThrough(12_000, verifierThrough: verifierThrough)))
        #expect(outcome.counts == (waits ? [.settleExtended] : [.conversion(.attributed)]))
        #expect(outcome.state.settling.count == (waits ? 1 : 0))
    }

    /// Once the verifier has finished the event it held, that event's verified form is somewhere before
    /// `verified`'s last entry: the conversion waits until the winner has read that far, so a look
    /// between the verifier's write and the winner's read does not attribute it without the event.
    @Test func aConversionTheVerifierHeldWaitsUntilVerifiedIsReadToWhereItsEventWent() throws {
        let (message, held) = try settlingInstall()
        let settled = WinnerStep(policy: .realTime, input: .settled, settleMilliseconds: 2_000)
        func look(_ state: DeviceAttributionState, now: Milliseconds, _ position: WinnerStep.VerifiedPosition) throws
            -> WinnerStep.Effects
        { try effects(settled.step(state, message: message, reengagements: [], now: now, verified: position)) }

        // Read past the horizon, but the verifier holds an event taken before the conversion.
        let holding = try look(held.state, now: 12_000, .readThrough(12_000, verifierThrough: Self.now - 1, lastWritten: 12_000))
        #expect(holding.counts == [.settleExtended] && holding.state.settling.first?.heldByVerifier == true)
        // Finished: `verified` ends at 40,000, read through 39,999. The horizon moves there, once.
        let moved = try look(holding.state, now: 41_000, .readThrough(39_999, lastWritten: 40_000))
        #expect(moved.counts == [.settleExtended] && moved.settle?.dueAt == 41_010)
        #expect(moved.state.settling.first?.settlesAfter == 40_000 && moved.state.settling.first?.heldByVerifier == nil)
        // Read through it: attributed, whatever `verified` holds by then.
        let attributed = try look(moved.state, now: 41_010, .readThrough(40_000, lastWritten: 41_000))
        #expect(attributed.counts == [.conversion(.attributed)] && attributed.state.settling.isEmpty)
        // Without the hold, `verified`'s end does not matter.
        let unheld = try look(held.state, now: 12_000, .readThrough(12_000, lastWritten: 40_000))
        #expect(unheld.counts == [.conversion(.attributed)])
    }

    /// A refused conversion is recorded with its reason; updates that waited on it go to the one before.
    @Test func aRefusedConversionRoutesItsWaitingUpdatesToThePreviousOne() throws {
        let step = WinnerStep(policy: .realTime, input: .settled, settleMilliseconds: 0)
        var state = DeviceAttributionState()
        state.record(F.impression("i", at: Self.now - F.hour))
        let first = try effects(step.step(state, message: Self.conversion(.download, at: Self.now), reengagements: [], now: 0))
        // A redownload a minute later, with no impression left (the click won the download): organic.
        var pending = first.state
        pending.settle(
            ConversionReport(
                deviceIdentifier: "device-1", advertisedItemIdentifier: F.app, conversionType: .redownload,
                time: Self.now + 60_000, countryCode: "US", receivedAt: Self.now + 60_000),
            conversionIdentifier: "conversion-\(Self.now + 60_000)")
        let update = ValueUpdateReport(
            deviceIdentifier: "device-1", advertisedItemIdentifier: F.app, update: PostbackUpdate(fineConversionValue: 9),
            time: Self.now + 61_000, receivedAt: Self.now + 61_000)
        let waiting = try effects(
            step.step(
                pending, message: Envelope(id: "u", time: update.time, body: .updateVerified(update)), reengagements: [], now: 0))
        #expect(waiting.outputs.isEmpty, "it waits for the settling redownload")

        let refused = try effects(
            step.step(waiting.state, message: Self.conversion(.redownload, at: Self.now + 60_000), reengagements: [], now: 0))
        #expect(refused.refusal?.reason == .noEligibleImpression)
        #expect(refused.refusal?.rejection.reason == .noEligibleImpression)
        #expect(refused.refusal?.at == Self.now + 60_000)
        #expect(refused.counts == [.conversion(.refused(.noEligibleImpression))])
        guard case .updateAttributed(let routed)? = refused.outputs.first?.body else { throw StepFailure("not routed") }
        #expect(routed.conversionIdentifier == "conversion-\(Self.now)")
        #expect(refused.outputs.first?.id == "u", "a routed update keeps its event's id")
    }

    /// An attributed re-engagement joins the device's history; entries older than the cap's period drop out.
    @Test func aReengagementRecordTrimsTheHistoryToTheCapPeriod() throws {
        let year = Retention.reengagements(.realTime)
        let record = WinnerStep.ReengagementRecord(
            conversionIdentifier: "r", time: Self.now, dropThrough: Self.now - year, keepFor: year)
        var history = [Self.now - year - 1, Self.now - year, Self.now - year + 1]
        record.apply(to: &history)
        #expect(history == [Self.now - year + 1, Self.now])
    }

    @Test func onlyVerifiedMessagesHaveAScope() {
        let step = WinnerStep(policy: .realTime, input: .verified, settleMilliseconds: 0)
        let timer = Envelope(time: 0, body: .windowClosed(WindowClosed(conversionIdentifier: "c", window: 0, time: 0)))
        if case .done = step.step(DeviceAttributionState(), message: timer, reengagements: [], now: 0) {
            Issue.record("a window timer is not attribution-winner's")
        }
    }
    static func update(at time: Milliseconds, tag: String? = nil) -> Envelope {
        let report = ValueUpdateReport(
            deviceIdentifier: "device-1", advertisedItemIdentifier: F.app,
            update: PostbackUpdate(fineConversionValue: 9, conversionTag: tag), time: time, receivedAt: time)
        return Envelope(id: "update-\(time)-\(tag ?? "")", time: time, body: .updateVerified(report))
    }

    /// Every write prunes by age as of `now`: impressions past the longest window an app may set (plus a
    /// day), conversions past their windows, and reports that waited too long for a conversion, each of
    /// which is refused so that it stays accounted for: `invalid-conversion-tag` when it named a tag no
    /// conversion had (Apple's invalidConversionTag), else `conversion-not-found`.
    @Test func everyWritePrunesTheStateByAge() throws {
        let step = WinnerStep(policy: .realTime, input: .settled, settleMilliseconds: 0)
        var state = DeviceAttributionState()
        state.record(F.impression("old-click", at: Self.now - 31 * F.day - 1))
        state.record(F.impression("click", at: Self.now - 31 * F.day))
        state.record(F.impression("old-view", type: .view, at: Self.now - 8 * F.day - 1))
        state.record(F.impression("view", type: .view, at: Self.now - 8 * F.day))
        state.conversions = [
            ConversionRecord(conversionIdentifier: "ended", conversionType: .download, time: Self.now - 37 * F.day - 1),
            ConversionRecord(conversionIdentifier: "open", conversionType: .download, time: Self.now - 37 * F.day),
        ]
        // A tag no conversion has: it waits, and is refused once 2 days have passed.
        let waiting = try effects(
            step.step(state, message: Self.update(at: Self.now - 2 * F.day - 1, tag: "never"), reengagements: [], now: Self.now))
        #expect(waiting.state.impressions.map(\.payload.impressionIdentifier) == ["click", "view"])
        #expect(waiting.state.conversions.map(\.conversionIdentifier) == ["open"])
        // Pruned as of this very write: an update already too old to wait is refused at once.
        #expect(waiting.state.pendingUpdates.isEmpty)
        #expect(waiting.rejections.map(\.rejection.reason) == [.invalidConversionTag])
        var old = ValueUpdateReport(
            deviceIdentifier: "device-1", advertisedItemIdentifier: F.app,
            update: PostbackUpdate(fineConversionValue: 1, conversionTag: "never"), time: Self.now - F.day, receivedAt: 0)
        old.eventIdentifier = "waited"
        var kept = state
        kept.pendingUpdates = [old]
        let later = try effects(
            step.step(
                kept, message: Self.update(at: Self.now + F.day + 1, tag: "never"), reengagements: [], now: Self.now + F.day + 1))
        #expect(later.state.pendingUpdates.map(\.time) == [Self.now + F.day + 1], "the new one waits, the old one is gone")
        #expect(later.rejections.map(\.rejection.reason) == [.invalidConversionTag])
        // Untagged, with no conversion at all to go to: conversion-not-found.
        var bare = DeviceAttributionState()
        bare.pendingUpdates = [
            ValueUpdateReport(
                deviceIdentifier: "device-1", advertisedItemIdentifier: F.app, update: PostbackUpdate(fineConversionValue: 1),
                time: Self.now - 3 * F.day, receivedAt: 0)
        ]
        let untagged = try effects(step.step(bare, message: Self.update(at: Self.now), reengagements: [], now: Self.now))
        #expect(untagged.rejections.map(\.rejection.reason) == [.conversionNotFound])
        #expect(later.rejections.map(\.rejection.eventIdentifier) == ["waited"])
        #expect(later.allRejections.map(\.log) == [.app(F.app)])
    }

    /// An app cannot make a device keep unbounded reports waiting for a conversion: past the limit a new
    /// one is refused `pending-limit`; one that finds its conversion is never refused by it.
    @Test func pendingReportsAreBoundedPerDeviceAndApp() throws {
        let step = WinnerStep(policy: .realTime, input: .settled, settleMilliseconds: 0)
        var state = DeviceAttributionState()
        for index in 0..<DeviceStateLimits.pendingUpdates {
            let outcome = try effects(
                step.step(
                    state, message: Self.update(at: Self.now + Milliseconds(index), tag: "t"), reengagements: [], now: Self.now))
            #expect(outcome.rejections.isEmpty)
            state = outcome.state
        }
        #expect(state.pendingUpdates.count == DeviceStateLimits.pendingUpdates)
        let refused = try effects(
            step.step(state, message: Self.update(at: Self.now + 1_000, tag: "t"), reengagements: [], now: Self.now))
        #expect(refused.rejections.map(\.rejection.reason) == [.pendingLimit])
        #expect(refused.state.pendingUpdates.count == DeviceStateLimits.pendingUpdates)
        // With a conversion to go to, an update is routed whatever waits.
        var installed = state
        installed.conversions = [ConversionRecord(conversionIdentifier: "c", conversionType: .download, time: Self.now)]
        let routed = try effects(
            step.step(installed, message: Self.update(at: Self.now + 2_000), reengagements: [], now: Self.now))
        #expect(routed.rejections.isEmpty && routed.outputs.count == 1)
    }

    /// An update for the install reported after a re-engagement that is still settling waits for that
    /// attribution: sent on at once, it could reach the scheduler before the re-engagement supersedes the
    /// install, and land in a window the re-engagement closes (seen on a loaded cluster run of
    /// overlap-supersede-without-opt-in.json). One reported before the re-engagement does not wait.
    @Test func anUpdateWaitsForAConversionSettlingBeforeIt() {
        var state = DeviceAttributionState()
        state.conversions = [ConversionRecord(conversionIdentifier: "install", conversionType: .download, time: Self.now)]
        state.settling = [
            ConversionRecord(
                conversionIdentifier: "re", conversionType: .reengagement, time: Self.now + F.day, conversionTag: "tag")
        ]
        func update(at time: Milliseconds) -> ValueUpdateReport {
            ValueUpdateReport(
                deviceIdentifier: "device-1", advertisedItemIdentifier: F.app,
                update: PostbackUpdate(fineConversionValue: 6, conversionTypes: [.install]), time: time, receivedAt: time)
        }
        func routed(_ report: ValueUpdateReport, in state: DeviceAttributionState) -> String? {
            var state = state
            return state.receive(report)?.conversionIdentifier
        }
        #expect(routed(update(at: Self.now + 3 * F.day), in: state) == nil, "waits for the re-engagement's attribution")
        #expect(routed(update(at: Self.now + F.hour), in: state) == "install")
        state.settling = []
        #expect(routed(update(at: Self.now + 3 * F.day), in: state) == "install")
    }

    /// A re-engagement without a country takes the latest install's; with one, it keeps its own; with no
    /// install seen, it has none. The state keeps the country in its compact form.
    @Test func aReengagementWithoutACountryTakesTheInstallsCountry() throws {
        func attribute(_ type: ConversionType, country: String?, at time: Milliseconds, in state: inout DeviceAttributionState)
            -> String?
        {
            state.record(F.impression("i-\(time)", at: time - F.hour, reengagement: true))
            let report = ConversionReport(
                deviceIdentifier: "device-1", advertisedItemIdentifier: F.app, conversionType: type, time: time,
                countryCode: country, receivedAt: time, conversionTag: type == .reengagement ? "tag-\(time)" : nil)
            let conversion = VerifiedConversion(report: report, app: AdvertisedAppConfiguration(itemIdentifier: F.app))
            guard case .success(let outcome) = state.attribute(conversion, conversionIdentifier: "c-\(time)", policy: .realTime)
            else { return "refused" }
            return outcome.attribution.countryCode
        }
        var none = DeviceAttributionState()
        #expect(attribute(.reengagement, country: nil, at: Self.now, in: &none) == nil)
        var state = DeviceAttributionState()
        #expect(attribute(.download, country: "FR", at: Self.now, in: &state) == "FR")
        #expect(try CompactCoding.decode(DeviceAttributionState.self, from: CompactCoding.encode(state)).installCountry == "FR")
        #expect(attribute(.reengagement, country: nil, at: Self.now + 2 * F.day, in: &state) == "FR")
        #expect(attribute(.redownload, country: "JP", at: Self.now + 4 * F.day, in: &state) == "JP")
        #expect(attribute(.reengagement, country: nil, at: Self.now + 6 * F.day, in: &state) == "JP")
        var own = DeviceAttributionState()
        #expect(attribute(.download, country: "FR", at: Self.now, in: &own) == "FR")
        #expect(attribute(.reengagement, country: "DE", at: Self.now + 2 * F.day, in: &own) == "DE")
    }
}
