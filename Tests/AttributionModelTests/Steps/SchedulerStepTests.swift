import AttributionModel
import Testing

/// The scheduler's step: plans, crowds, timers, the finished marker, and what it counts.
@Suite struct SchedulerStepTests {
    typealias F = Fixture
    let step = SchedulerStep(
        policy: .realTime, thresholds: CrowdTierThresholds(), windowCloseGraceMilliseconds: 10_000,
        identifiers: Fixture.identifiers)

    func attribution(_ id: String, publisher: ItemIdentifier, country: String) -> Attribution {
        var attribution = F.attribution(at: 1_700_000_000_000, country: country, publisher: publisher)
        attribution.conversionIdentifier = id
        return attribution
    }

    func message(_ attribution: Attribution) -> Envelope {
        Envelope(id: attribution.conversionIdentifier, time: attribution.conversionTime, body: .conversionAttributed(attribution))
    }

    func effects(_ outcome: StepOutcome<SchedulerStep.Effects>) throws -> SchedulerStep.Effects {
        guard case .done(let effects) = outcome else { throw StepFailure("expected effects, got \(outcome)") }
        return effects
    }

    /// Tier 3 from any crowd: every window with a value sends its winner's postback.
    func tierThree(grace: Milliseconds) -> SchedulerStep {
        SchedulerStep(
            policy: .realTime, thresholds: CrowdTierThresholds(tier1: 0, tier2: 0, tier3: 0),
            windowCloseGraceMilliseconds: grace, identifiers: Fixture.identifiers)
    }

    /// The plan a step stores for a new attribution.
    func planned(_ attribution: Attribution, by step: SchedulerStep) throws
        -> PostbackPlan
    {
        var crowd = CrowdCounts()
        return try stored(
            effects(
                step.step(.absent, message: message(attribution), crowd: &crowd, schema: nil, now: 0)))
    }

    /// The plan some effects store.
    func stored(_ effects: SchedulerStep.Effects) throws -> PostbackPlan {
        guard case .plan(let plan)? = effects.store else { throw StepFailure("no plan stored") }
        return plan
    }

    /// The batch the scheduler bug needed: a redelivered attribution of a finished plan, then a fresh
    /// attribution. The finished one changes nothing and counts nothing; the fresh one is assessed on its
    /// own crowd (here one conversion: tier 0), not on the finished one's (tier 3).
    @Test func aFinishedPlansRedeliveryLendsNoCrowdToTheNextAttribution() throws {
        let finished = attribution("finished", publisher: 7_001, country: "US")
        let fresh = attribution("fresh", publisher: 7_002, country: "FR")
        let day = CrowdDayBuckets.day(of: finished.conversionTime, policy: .realTime)
        var crowd = CrowdCounts(read: Dictionary(uniqueKeysWithValues: Crowd.all(for: finished).map { ($0, [day: 50_000]) }))

        let first = try effects(
            step.step(.finished, message: message(finished), crowd: &crowd, schema: nil, now: 0))
        #expect(first.store == nil && first.crowd == nil && first.timers.isEmpty && first.held.isEmpty)

        let second = try effects(
            step.step(.absent, message: message(fresh), crowd: &crowd, schema: nil, now: 0))
        guard case .plan(let plan)? = second.store else { throw StepFailure("no plan stored") }
        // The advertised app and source crowds are shared with the finished conversion (same app, network, source).
        #expect(plan.crowd.tier == .zero)
        #expect(plan.crowd.countryIsTierThree == false)
        #expect(second.crowd?.crowds == Crowd.all(for: fresh))
        // No window timer before a value lands in a window; the plan expires by itself, its marker after it.
        #expect(second.timers.isEmpty)
        #expect(second.expiresAt == Retention.plan(plan, policy: .realTime))
        #expect(second.markerExpiresAt == Retention.plan(plan, policy: .realTime) + Retention.finishedMarker(.realTime))
    }

    /// An attributed update of fine value 5, coarse `low`.
    func update(_ id: String, at time: Milliseconds, lock: Bool = false, event: String? = nil) -> Envelope {
        Envelope(
            id: event ?? "\(id)@\(time)", time: time,
            body: .updateAttributed(
                AttributedUpdate(
                    conversionIdentifier: id,
                    update: PostbackUpdate(fineConversionValue: 5, coarseConversionValue: .low, lockPostback: lock),
                    time: time, eventIdentifier: event)))
    }

    /// A window's timer is set when the first value lands in it (spec section 4: a window without a value
    /// sends nothing), once; a lock needs none; a first value that arrives after its window's close
    /// closes it at once, counted as late. Rows: (update's offset from the conversion, when it is
    /// processed past that, lock) → the timers set, postbacks prepared, late count.
    @Test(
        arguments: [
            // In time, in each window: one timer each.
            ([(F.hour, 0, false)], ["t:0"], 0, 0),
            ([(3 * F.day, 0, false)], ["t:1"], 0, 0),
            ([(10 * F.day, 0, false)], ["t:2"], 0, 0),
            // A second value in the same window (or the same update redelivered): no second timer.
            ([(F.hour, 0, false), (2 * F.hour, 0, false)], ["t:0"], 0, 0),
            ([(F.hour, 0, false), (F.hour, 0, false)], ["t:0"], 0, 0),
            // Windows 0 and 2: their two timers, window 1 none.
            ([(F.hour, 0, false), (20 * F.day, 0, false)], ["t:0", "t:2"], 0, 0),
            // A lock prepares at once: no timer, even after an earlier value set one.
            ([(F.hour, 0, true)], [], 1, 0),
            ([(F.hour, 0, false), (2 * F.hour, 0, true)], ["t:0"], 1, 0),
            // Late through the pipeline, past its window's close (end + 10 s grace): closed at once, counted.
            ([(3 * F.day, 5 * F.day, false)], [], 1, 1),
            ([(3 * F.day, 4 * F.day + 10_000, false)], [], 1, 1),
            // Just before the close: a timer still.
            ([(3 * F.day, 4 * F.day + 9_999, false)], ["t:1"], 0, 0),
        ] as [([(Milliseconds, Milliseconds, Bool)], [String], Int, Int)])
    func windowTimersAreSetByTheFirstValueInAWindow(
        updates: [(offset: Milliseconds, processedAfter: Milliseconds, lock: Bool)], timers: [String], prepared: Int,
        late: Int
    ) throws {
        let step = tierThree(grace: 10_000)
        var crowd = CrowdCounts()
        let attribution = attribution("t", publisher: 1, country: "US")
        var plan = try planned(attribution, by: step)
        var set: [SchedulerStep.Timer] = []
        var held: [HeldPostback] = []
        var counts: [StepCount] = []
        for row in updates {
            let time = attribution.conversionTime + row.offset
            let effects = try effects(
                step.step(
                    .plan(plan), message: update("t", at: time, lock: row.lock, event: "e\(row.offset)"), crowd: &crowd,
                    schema: nil, now: time + row.processedAfter))
            plan = try stored(effects)
            set += effects.timers
            held += effects.held
            counts += effects.counts
        }
        #expect(set.map(\.identifier) == timers)
        let ends = plan.windowEnds(policy: .realTime)
        #expect(set.map(\.dueAt) == set.map { timer in ends[Int(timer.identifier.dropFirst(2))!].at + 10_000 })
        #expect(held.count == prepared)
        #expect(counts.filter { $0 == .latePostback(.prepared) }.count == late)
    }

    /// A plan's expiry is fixed from its attribution and moves only when a postback is held past it; its
    /// marker moves with it.
    @Test func aPlansExpiryMovesOnlyForAPostbackHeldPastIt() throws {
        let step = tierThree(grace: 0)
        var crowd = CrowdCounts()
        let attribution = attribution("x", publisher: 1, country: "US")
        var plan = try planned(attribution, by: step)
        let natural = Retention.plan(plan, policy: .realTime)
        #expect(natural == attribution.conversionTime + 36 * F.day)
        // A value in window 0, then its close: the expiry stays, no marker is written again.
        for message in [
            update("x", at: attribution.conversionTime + F.hour),
            Envelope(
                time: plan.windowEnds(policy: .realTime)[0].at,
                body: .windowClosed(
                    WindowClosed(conversionIdentifier: "x", window: 0, time: plan.windowEnds(policy: .realTime)[0].at))),
        ] {
            let effects = try effects(
                step.step(.plan(plan), message: message, crowd: &crowd, schema: nil, now: message.time))
            plan = try stored(effects)
            #expect(effects.expiresAt == natural && effects.markerExpiresAt == nil)
        }
        // A value in window 2, then its close: a postback due up to 144 h after day 35 moves both.
        let end2 = plan.windowEnds(policy: .realTime)[2].at
        plan = try stored(
            effects(
                step.step(
                    .plan(plan), message: update("x", at: end2 - F.hour), crowd: &crowd, schema: nil, now: end2 - F.hour)))
        let closed = try effects(
            step.step(
                .plan(plan),
                message: Envelope(
                    time: end2, body: .windowClosed(WindowClosed(conversionIdentifier: "x", window: 2, time: end2))),
                crowd: &crowd, schema: nil, now: end2))
        let due = try #require(closed.held.first?.dueAt)
        #expect(closed.expiresAt == max(natural, due))
        #expect(closed.markerExpiresAt == (due > natural ? due + Retention.finishedMarker(.realTime) : nil))
    }

    /// Sizes include the conversion itself and the batch's earlier conversions of the same crowd.
    @Test func earlierConversionsOfTheBatchCountTowardTheCrowd() throws {
        var crowd = CrowdCounts(read: [:])
        let step = SchedulerStep(
            policy: .realTime, thresholds: CrowdTierThresholds(tier1: 2, tier2: 3, tier3: 4), windowCloseGraceMilliseconds: 0,
            identifiers: Fixture.identifiers)
        var tiers: [CrowdTier] = []
        for n in 0..<4 {
            let outcome = step.step(
                .absent, message: message(attribution("c\(n)", publisher: 1, country: "US")), crowd: &crowd, schema: nil, now: 0)
            if case .plan(let plan)? = try effects(outcome).store { tiers.append(plan.crowd.tier) }
        }
        #expect(tiers == [.zero, .one, .two, .three])
    }

    /// Development conversions never count in a crowd: a burst of them leaves the next production
    /// conversion at the tier its real crowd earns.
    @Test func developmentConversionsCountInNoCrowd() throws {
        // The production conversion's publisher app is a large crowd already: its tier then rests on the
        // crowds it shares with the development conversions (app, country, source).
        let day = CrowdDayBuckets.day(of: attribution("p", publisher: 1, country: "US").conversionTime, policy: .realTime)
        var crowd = CrowdCounts(read: [.publisherApp(1): [day: 50_000]])
        let step = SchedulerStep(
            policy: .realTime, thresholds: CrowdTierThresholds(tier1: 2, tier2: 3, tier3: 4), windowCloseGraceMilliseconds: 0,
            identifiers: Fixture.identifiers)
        for n in 0..<5 {
            let development = try effects(
                step.step(
                    .absent, message: message(attribution("d\(n)", publisher: 0, country: "US")), crowd: &crowd, schema: nil,
                    now: 0))
            #expect(development.crowd == nil)
            #expect(try stored(development).crowd == .development)
        }
        let production = try stored(
            effects(
                step.step(
                    .absent, message: message(attribution("p", publisher: 1, country: "US")), crowd: &crowd, schema: nil, now: 0))
        )
        #expect(production.crowd.tier == .zero, "alone in the crowds it shares with them (tier 3 had they counted)")
    }

    @Test(arguments: [
        (SchedulerStep.PlanState.absent, "update", true),  // the plan is still on its way: retried
        (SchedulerStep.PlanState.finished, "update", false),  // finished: acknowledged, ignored
        (SchedulerStep.PlanState.absent, "timer", false),  // plan removed: nothing to do
        (SchedulerStep.PlanState.absent, "superseded", false),
    ])
    func messagesWithoutAPlan(state: SchedulerStep.PlanState, kind: String, retried: Bool) throws {
        let body: MessageBody =
            switch kind {
            case "update":
                .updateAttributed(
                    AttributedUpdate(
                        conversionIdentifier: "c", update: PostbackUpdate(fineConversionValue: 3), time: 1, eventIdentifier: "e"))
            case "timer": .windowClosed(WindowClosed(conversionIdentifier: "c", window: 0, time: 1))
            default: .conversionSuperseded(ConversionSuperseded(conversionIdentifier: "c", supersededBy: "d", time: 1))
            }
        var crowd = CrowdCounts()
        let outcome = step.step(
            state, message: Envelope(time: 1, body: body), crowd: &crowd, schema: nil, now: 0)
        switch outcome {
        case .retry: #expect(retried)
        case .done(let effects): #expect(!retried && effects.store == nil)
        }
    }

    /// The last window closes with a postback still held: the plan is kept until its release, which a
    /// timer then turns into the finished marker.
    @Test func aFinishedPlanIsKeptUntilItsLastPostbackIsReleased() throws {
        // Tier 3 from any crowd: every window sends a postback, the last one due after the last window ends.
        let step = tierThree(grace: 0)
        var crowd = CrowdCounts()
        let attribution = attribution("kept", publisher: 1, country: "US")
        var plan = try planned(attribution, by: step)
        // A value in each window, so that each window prepares its postback.
        for offset in [F.hour, 3 * F.day, 10 * F.day] {
            let value = update("kept", at: attribution.conversionTime + offset)
            plan = try stored(
                effects(step.step(.plan(plan), message: value, crowd: &crowd, schema: nil, now: value.time)))
        }
        var held: [HeldPostback] = []
        let ends = plan.windowEnds(policy: .realTime)
        for (window, at) in ends {
            let timer = Envelope(
                time: at, body: .windowClosed(WindowClosed(conversionIdentifier: "kept", window: window, time: at)))
            let effects = try effects(
                step.step(.plan(plan), message: timer, crowd: &crowd, schema: nil, now: at))
            held += effects.held
            switch effects.store {
            case .plan(let next)?: plan = next
            default: #expect(window == 2, "only the last window may finish the plan")
            }
            if window == 2 {
                // Kept until the last held postback leaves, with no timer: the scheduler's key expires then.
                #expect(effects.timers.isEmpty)
                #expect(effects.expiresAt == held.map(\.dueAt).max())
                #expect(effects.store == .plan(plan))
                // A wake timer from before (window `count`) still finds nothing to do.
                let wakeAt = try #require(effects.expiresAt)
                let wake = try self.effects(
                    step.step(
                        .plan(plan),
                        message: Envelope(
                            time: wakeAt,
                            body: .windowClosed(WindowClosed(conversionIdentifier: "kept", window: 3, time: wakeAt))),
                        crowd: &crowd, schema: nil, now: wakeAt))
                #expect(wake.store == .finished && wake.expiresAt == nil && wake.held.isEmpty)
            } else {
                #expect(effects.expiresAt == Retention.plan(plan, policy: .realTime))
            }
        }
        #expect(!held.isEmpty)
    }
}

struct StepFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
