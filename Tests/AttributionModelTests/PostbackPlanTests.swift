import AttributionModel
import Foundation
import Testing

@Suite("Postback plan: windows, updates and locks")
struct PostbackPlanTests {
    typealias F = Fixture
    let tier3 = CrowdAssessment(tier: .three, sourceIdentifierDigits: 4, countryIsTierThree: true)

    func update(
        _ fine: Int, _ coarse: CoarseConversionValue? = nil, lock: Bool = false, at time: Milliseconds,
        types: [ConversionKind]? = nil
    ) -> AttributedUpdate {
        AttributedUpdate(
            conversionIdentifier: "c-1",
            update: PostbackUpdate(
                fineConversionValue: fine, coarseConversionValue: coarse, lockPostback: lock, conversionTypes: types),
            time: time)
    }

    @Test func lockPreparesTheFirstPostbackAtOnceWithADelayOf24To48Hours() throws {
        var plan = PostbackPlan(attribution: F.attribution(), crowd: tier3)
        let held = plan.apply(
            update(42, .high, lock: true, at: 3 * F.hour), policy: .realTime, identifiers: Fixture.identifiers)
        let postback = try #require(held.first)
        #expect(held.count == 1)
        #expect((3 * F.hour + 24 * F.hour...3 * F.hour + 48 * F.hour).contains(postback.dueAt))
        #expect(postback.order.payload.postbackSequenceIndex == 0)
        #expect(postback.order.payload.didWin)
        #expect(postback.order.payload.sourceIdentifier == "5239")
        #expect(postback.order.payload.publisherItemIdentifier == 5_838_492)
        #expect(postback.order.conversionValue == 42)
        #expect(postback.order.coarseConversionValue == nil)
        #expect(postback.order.countryCode == "US")
        // The locked window ignores further updates; its end timer does nothing more.
        let r1 = plan.apply(
            update(1, lock: true, at: 4 * F.hour), policy: .realTime, identifiers: Fixture.identifiers)
        #expect(r1.isEmpty)
        let r2 = plan.closeWindow(0, policy: .realTime, identifiers: Fixture.identifiers)
        #expect(r2.isEmpty)
    }

    /// A plan Redis lost in a failover is planned again from the same attribution and messages: its
    /// postbacks come out identical, identifier and due time (a receiver deduplicates the copy the lost
    /// plan sent, and no second delay is drawn), each identifier its own per window and contender and,
    /// under another key, unrelated.
    @Test func aConversionPlannedAgainPreparesTheSamePostbacks() throws {
        var attribution = F.attribution()
        attribution.nonWinners = [attribution.winner]
        func planned(under key: PostbackIdentifiers) -> [HeldPostback] {
            var plan = PostbackPlan(attribution: attribution, crowd: tier3)
            _ = plan.apply(update(1, .low, at: F.hour), policy: .realTime, identifiers: key)
            var held = plan.closeWindow(0, policy: .realTime, identifiers: key)
            _ = plan.apply(update(2, .high, at: 3 * F.day), policy: .realTime, identifiers: key)
            held += plan.closeWindow(1, policy: .realTime, identifiers: key)
            return held
        }
        let first = planned(under: F.identifiers)
        let ids = first.map(\.order.payload.postbackIdentifier)
        #expect(first.count == 3, "the winner and the non-winner in window 0, the winner in window 1")
        #expect(planned(under: F.identifiers) == first)
        #expect(Set(ids).count == 3)
        let other = planned(under: .ephemeral())
        #expect(Set(other.map(\.order.payload.postbackIdentifier)).isDisjoint(with: ids))
        #expect(ids.allSatisfy { UUID(uuidString: $0) != nil && Array($0.utf8)[14] == UInt8(ascii: "4") })
    }

    @Test func windowEndsSendTheLatestValuesCoarseOnlyAfterTheFirst() throws {
        var plan = PostbackPlan(attribution: F.attribution(), crowd: tier3)
        let r3 = plan.apply(update(10, .low, at: F.hour), policy: .realTime, identifiers: Fixture.identifiers)
        #expect(r3.isEmpty)
        let r4 = plan.apply(
            update(20, .medium, at: 2 * F.hour), policy: .realTime, identifiers: Fixture.identifiers)
        #expect(r4.isEmpty)
        let first = plan.closeWindow(0, policy: .realTime, identifiers: Fixture.identifiers)
        #expect(first.map(\.order.conversionValue) == [20])
        #expect(first.allSatisfy { (2 * F.day + 24 * F.hour...2 * F.day + 48 * F.hour).contains($0.dueAt) })
        _ = plan.apply(update(30, .high, at: 3 * F.day), policy: .realTime, identifiers: Fixture.identifiers)
        let second = plan.closeWindow(1, policy: .realTime, identifiers: Fixture.identifiers)
        #expect(second.map(\.order.coarseConversionValue) == [.high])
        #expect(second.map(\.order.conversionValue) == [nil])
        #expect(second.map(\.order.payload.sourceIdentifier) == ["39"])
        #expect(second.allSatisfy { (7 * F.day + 24 * F.hour...7 * F.day + 144 * F.hour).contains($0.dueAt) })
        // Window 2: no update in it, so no postback; window 1's value does not carry over.
        let third = plan.closeWindow(2, policy: .realTime, identifiers: Fixture.identifiers)
        #expect(third.isEmpty)
        #expect(plan.isFinished)
    }

    /// Updates may reach the scheduler out of order (replicas, retries, a timer released a little late):
    /// each window still carries exactly the values stamped before its end or lock.
    struct OrderCase: Sendable, CustomTestStringConvertible {
        let name: String
        /// (fine, coarse, lock, hours after the conversion), in processing order; a nil fine closes that window.
        let steps: [(fine: Int?, coarse: CoarseConversionValue?, lock: Bool, hours: Int64)]
        /// Per window: the fine (window 0) or coarse (later) value sent, or "none" for no postback.
        let expected: [String]
        var testDescription: String { name }
    }

    static let orderCases: [OrderCase] = [
        OrderCase(
            name: "a window-1 update processed before window 0 closes does not leak into window 0",
            steps: [
                (10, .low, false, 1), (30, .high, false, 80), (nil, nil, false, 0), (nil, nil, false, 1), (nil, nil, false, 2),
            ],
            expected: ["10", "high", "none"]),
        OrderCase(
            name: "an older update processed after a newer one does not overwrite it",
            steps: [
                (20, .medium, false, 5), (10, .low, false, 1), (nil, nil, false, 0), (nil, nil, false, 1), (nil, nil, false, 2),
            ],
            expected: ["20", "none", "none"]),
        OrderCase(
            name: "a lock uses only values stamped before it, and drops later ones of its window that overtook it",
            steps: [(40, .high, false, 10), (12, .low, true, 5), (nil, nil, false, 1), (nil, nil, false, 2)],
            expected: ["12", "none", "none"]),
        OrderCase(
            name: "a first update in window 1 starts no window 0 postback even if processed before window 0 closes",
            steps: [(30, .high, false, 80), (nil, nil, false, 0), (nil, nil, false, 1), (nil, nil, false, 2)],
            expected: ["none", "high", "none"]),
        OrderCase(
            name: "an update without a coarse value keeps the coarse value of its window in force",
            steps: [
                (10, .medium, false, 50), (11, nil, false, 60), (nil, nil, false, 0), (nil, nil, false, 1), (nil, nil, false, 2),
            ],
            expected: ["none", "medium", "none"]),
        OrderCase(
            name: "a later window without an update sends nothing, and nothing carries over into the next",
            steps: [
                (10, .high, false, 1), (nil, nil, false, 0), (nil, nil, false, 1), (20, nil, false, 200), (nil, nil, false, 2),
            ],
            expected: ["10", "none", "no value"]),
    ]

    /// One step of an `OrderCase`: an update, or a window's timer.
    func run(
        _ step: (fine: Int?, coarse: CoarseConversionValue?, lock: Bool, hours: Int64), on plan: inout PostbackPlan
    ) -> [HeldPostback] {
        guard let fine = step.fine else {
            return plan.closeWindow(Int(step.hours), policy: .realTime, identifiers: Fixture.identifiers)
        }
        return plan.apply(
            update(fine, step.coarse, lock: step.lock, at: step.hours * F.hour), policy: .realTime,
            identifiers: Fixture.identifiers)
    }

    @Test(arguments: orderCases)
    func windowsCarryTheValuesStampedBeforeTheirEnd(_ c: OrderCase) {
        var plan = PostbackPlan(attribution: F.attribution(), crowd: tier3)
        var held: [HeldPostback] = []
        for step in c.steps { held += run(step, on: &plan) }
        let sent = (0..<3).map { window -> String in
            guard let order = held.first(where: { $0.order.payload.postbackSequenceIndex == window })?.order else {
                return "none"
            }
            return order.conversionValue.map(String.init) ?? order.coarseConversionValue?.rawValue ?? "no value"
        }
        #expect(sent == c.expected)
        #expect(plan.isFinished)
    }

    /// Updates stamped before a window closed that reach the scheduler after it (a stage was down, a
    /// claim waited): the window is prepared then, or its held postbacks re-prepared in place.
    static let lateCases: [OrderCase] = [
        OrderCase(
            name: "window 0 closed with no update: a late one prepares it, and only it",
            steps: [(nil, nil, false, 0), (10, .low, false, 1), (nil, nil, false, 1), (nil, nil, false, 2)],
            expected: ["10", "none", "none"]),
        OrderCase(
            name: "a newer late update re-prepares the held postback",
            steps: [
                (10, .low, false, 1), (nil, nil, false, 0), (20, .medium, false, 2), (nil, nil, false, 1), (nil, nil, false, 2),
            ],
            expected: ["20", "none", "none"]),
        OrderCase(
            name: "an older late update changes nothing",
            steps: [
                (20, .medium, false, 5), (nil, nil, false, 0), (10, .low, false, 1), (nil, nil, false, 1), (nil, nil, false, 2),
            ],
            expected: ["20", "none", "none"]),
        OrderCase(
            name: "a late update stamped after the window's lock is ignored",
            steps: [
                (12, .low, true, 5), (40, .high, false, 10), (nil, nil, false, 0), (nil, nil, false, 1), (nil, nil, false, 2),
            ],
            expected: ["12", "none", "none"]),
        OrderCase(
            name: "a late lock freezes the window as of the lock",
            steps: [
                (40, .high, false, 10), (nil, nil, false, 0), (12, .low, true, 5), (nil, nil, false, 1), (nil, nil, false, 2),
            ],
            expected: ["12", "none", "none"]),
        OrderCase(
            name: "windows 0 and 1 closed with no update are each prepared by a late update of their own",
            steps: [
                (nil, nil, false, 0), (nil, nil, false, 1), (30, .high, false, 50), (10, .low, false, 1), (nil, nil, false, 2),
            ],
            expected: ["10", "high", "none"]),
        OrderCase(
            name: "a late window-1 update re-prepares window 1 and not window 0",
            steps: [
                (10, .low, false, 1), (nil, nil, false, 0), (nil, nil, false, 1), (30, .high, false, 80), (nil, nil, false, 2),
            ],
            expected: ["10", "high", "none"]),
    ]

    @Test(arguments: lateCases)
    func lateUpdatesCountWhileTheirPostbacksAreHeld(_ c: OrderCase) throws {
        let other = AttributedImpression(
            adNetworkIdentifier: F.network("two.net"), impressionIdentifier: "n", sourceIdentifier: 1234,
            publisherItemIdentifier: 77, interactionType: .view, kind: .adAttributionKit)
        var plan = PostbackPlan(attribution: F.attribution(nonWinners: [other]), crowd: tier3)
        // The held queue as the scheduler keeps it: a replacement swaps a held postback, never adds one.
        var held: [String: HeldPostback] = [:]
        for step in c.steps {
            for postback in run(step, on: &plan) {
                let id = postback.order.payload.postbackIdentifier
                if let old = postback.replacing {
                    let current = try #require(held[id], "\(c.name): replaces a postback never held")
                    #expect(current.order == old.order && current.dueAt == old.dueAt, "\(c.name): replaces another postback")
                    #expect(old.order.payload == postback.order.payload, "\(c.name): a replacement keeps its payload")
                } else {
                    #expect(held[id] == nil, "\(c.name): one id held twice")
                }
                held[id] = HeldPostback(order: postback.order, dueAt: postback.dueAt)
            }
        }
        let sent = (0..<3).map { window -> String in
            let winning = held.values.filter { $0.order.payload.postbackSequenceIndex == window && $0.order.payload.didWin }
            guard let order = winning.first?.order, winning.count == 1 else { return winning.isEmpty ? "none" : "several" }
            return order.conversionValue.map(String.init) ?? order.coarseConversionValue?.rawValue ?? "no value"
        }
        #expect(sent == c.expected, "\(c.name)")
        // The non-winner's one first-window postback, with the same coarse value as the winner's.
        let losing = held.values.filter { !$0.order.payload.didWin }
        #expect(losing.count == (c.expected[0] == "none" ? 0 : 1), "\(c.name)")
        #expect(plan.isFinished)
        // Each window's postbacks stay due within its delay range after the moment they were prepared as of.
        for postback in held.values {
            let window = postback.order.payload.postbackSequenceIndex
            let at = try #require(plan.closed[window]?.at)
            let range = PostbackDelay.range(sequenceIndex: window, development: false)
            let policy = TimePolicy.realTime
            #expect(
                (at + policy.milliseconds(range.lowerBound)...at + policy.milliseconds(range.upperBound)).contains(postback.dueAt)
            )
        }
    }

    /// Windows a superseding conversion stopped from opening are not prepared by a late update.
    @Test func windowsThatNeverOpenedStayClosedToLateUpdates() throws {
        var plan = PostbackPlan(attribution: F.attribution(), crowd: tier3)
        _ = plan.apply(update(10, .low, at: F.hour), policy: .realTime, identifiers: Fixture.identifiers)
        let superseded = plan.supersede(at: 2 * F.hour, policy: .realTime, identifiers: Fixture.identifiers)
        #expect(superseded.map(\.order.conversionValue) == [10])
        #expect(plan.isFinished)
        let late = plan.apply(
            update(20, .high, at: 90 * F.hour / 60), policy: .realTime, identifiers: Fixture.identifiers)
        #expect(late.count == 1 && late.first?.replacing?.order.conversionValue == 10 && late.first?.order.conversionValue == 20)
        #expect(late.allSatisfy { $0.order.payload.postbackSequenceIndex == 0 })
        #expect(plan.closed[1] == nil && plan.closed[2] == nil)
        #expect(plan.lastDueAt == superseded.first?.dueAt)
        let last = try #require(plan.lastDueAt)
        #expect(
            plan.keptUntil(now: last - 1, policy: .realTime) == last && plan.keptUntil(now: last, policy: .realTime) == nil)
    }

    /// The last window closed with nothing to send (no update in it): the finished plan is kept for the
    /// window's shortest delay, so that a late update stamped in the window can still prepare it, and
    /// then left to its marker.
    @Test func aWindowClosedWithNothingToSendStaysPreparableForItsShortestDelay() throws {
        var plan = PostbackPlan(attribution: F.attribution(), crowd: tier3)
        _ = plan.apply(
            update(10, .low, lock: true, at: F.hour), policy: .realTime, identifiers: Fixture.identifiers)
        #expect(plan.closeWindow(1, policy: .realTime, identifiers: Fixture.identifiers).isEmpty)
        #expect(plan.closeWindow(2, policy: .realTime, identifiers: Fixture.identifiers).isEmpty)
        #expect(plan.isFinished)
        let end = 35 * F.day
        let first = try #require(plan.lastDueAt)
        #expect(first < end)
        #expect(plan.keptUntil(now: end, policy: .realTime) == end + 24 * F.hour)
        #expect(plan.keptUntil(now: end + 24 * F.hour, policy: .realTime) == nil)
        let late = plan.apply(
            update(30, .high, at: end - F.hour), policy: .realTime, identifiers: Fixture.identifiers)
        #expect(late.map(\.order.payload.postbackSequenceIndex) == [2])
        #expect(late.map(\.order.coarseConversionValue) == [.high])
        #expect(late.allSatisfy { (end + 24 * F.hour...end + 144 * F.hour).contains($0.dueAt) })
    }

    /// A superseding conversion that reaches the plan after the window's end froze the window as of it:
    /// values stamped after it are dropped, the delay is redrawn from it, and later updates before the
    /// end no longer count.
    @Test func aLateSupersessionFreezesTheWindowAsOfIt() throws {
        var plan = PostbackPlan(attribution: F.attribution(), crowd: tier3)
        _ = plan.apply(update(10, .low, at: F.hour), policy: .realTime, identifiers: Fixture.identifiers)
        _ = plan.apply(
            update(20, .medium, at: 10 * F.hour), policy: .realTime, identifiers: Fixture.identifiers)
        let closed = try #require(
            plan.closeWindow(0, policy: .realTime, identifiers: Fixture.identifiers).first)
        #expect(closed.order.conversionValue == 20)
        let swapped = plan.supersede(at: 5 * F.hour, policy: .realTime, identifiers: Fixture.identifiers)
        let postback = try #require(swapped.first)
        #expect(swapped.count == 1 && postback.replacing?.order == closed.order && postback.replacing?.dueAt == closed.dueAt)
        #expect(postback.order.conversionValue == 10)
        #expect((5 * F.hour + 24 * F.hour...5 * F.hour + 48 * F.hour).contains(postback.dueAt))
        #expect(plan.closed[0]?.at == 5 * F.hour && plan.isFinished)
        #expect(
            plan.apply(update(30, .high, at: 6 * F.hour), policy: .realTime, identifiers: Fixture.identifiers)
                .isEmpty)
    }

    /// What closed windows prepared survives the plan's JSON; a plan stored before has none.
    @Test func closedWindowsRoundTrip() throws {
        var plan = PostbackPlan(attribution: F.attribution(), crowd: tier3)
        _ = plan.apply(update(10, .low, at: F.hour), policy: .realTime, identifiers: Fixture.identifiers)
        _ = plan.closeWindow(0, policy: .realTime, identifiers: Fixture.identifiers)
        let decoded = try JSONCoding.decoder.decode(PostbackPlan.self, from: JSONCoding.encoder.encode(plan))
        #expect(decoded == plan)
        #expect(decoded.closed[0]?.postbacks.count == 1)
        #expect(try CompactCoding.decode(PostbackPlan.self, from: CompactCoding.encode(plan)) == plan)
        var json = try #require(try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(plan)) as? [String: Any])
        json["closed"] = nil
        var old = try JSONCoding.decoder.decode(PostbackPlan.self, from: JSONSerialization.data(withJSONObject: json))
        #expect(old.closed == [nil, nil, nil])
        #expect(
            old.apply(update(20, .high, at: 2 * F.hour), policy: .realTime, identifiers: Fixture.identifiers)
                .isEmpty)
    }

    /// A plan stored before values were kept per update still decodes, with its values as of its first update.
    @Test func planStoredInTheEarlierFormatDecodes() throws {
        var plan = PostbackPlan(attribution: F.attribution(), crowd: tier3)
        _ = plan.apply(update(7, .low, at: F.hour), policy: .realTime, identifiers: Fixture.identifiers)
        var json = try #require(try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(plan)) as? [String: Any])
        json["reported"] = nil
        json["values"] = ["fine": 9, "coarse": "high"]
        let old = try JSONCoding.decoder.decode(PostbackPlan.self, from: JSONSerialization.data(withJSONObject: json))
        #expect(old.values(window: 0, at: F.hour, policy: .realTime) == .init(fine: 9, coarse: .high))
        #expect(old.values(window: 0, at: F.hour - 1, policy: .realTime) == nil)
    }

    /// Activity reaches the plan; the pinned schema turns it into updates: a value only when it
    /// changes, never lowered, a locking rule locking the window, each window with its own totals.
    @Test func activityBecomesUpdatesThroughThePinnedSchema() throws {
        let schema = ConversionValueSchema(windows: [
            .init(
                window: 0,
                rules: [
                    .init(when: .init(revenue: ["USD": 20]), fine: 60, coarse: .high, lock: true),
                    .init(when: .init(revenue: ["USD": 5]), fine: 42, coarse: .high),
                    .init(when: .init(sessions: 1), fine: 1, coarse: .low),
                ]),
            .init(window: 1, rules: [.init(when: .init(sessions: 2), fine: 2, coarse: .medium)]),
        ])
        var plan = PostbackPlan(attribution: F.attribution(at: F.hour), crowd: tier3, valueSchema: schema)
        func activity(_ a: Activity, at time: Milliseconds) -> [HeldPostback] {
            plan.record(
                AttributedActivity(conversionIdentifier: "c-1", activity: a, time: time), policy: .realTime,
                identifiers: Fixture.identifiers)
        }
        #expect(activity(Activity(sessions: 1), at: 0).isEmpty)  // before the conversion: not counted
        #expect(plan.reported.isEmpty)
        #expect(activity(Activity(sessions: 1), at: 2 * F.hour).isEmpty)
        #expect(plan.values(window: 0, at: 2 * F.hour, policy: .realTime) == .init(fine: 1, coarse: .low))
        #expect(activity(Activity(revenue: ["USD": 6]), at: 3 * F.hour).isEmpty)
        #expect(plan.values(window: 0, at: 3 * F.hour, policy: .realTime) == .init(fine: 42, coarse: .high))
        #expect(plan.reported.count == 2)
        #expect(activity(Activity(sessions: 5), at: 4 * F.hour).isEmpty)  // same value: no update
        #expect(plan.reported.count == 2)
        let locked = activity(Activity(revenue: ["USD": 15]), at: 5 * F.hour)  // 21 USD: the locking rule
        #expect(locked.map(\.order.conversionValue) == [60])
        #expect(plan.windowsDone[0])
        #expect(activity(Activity(revenue: ["USD": 100]), at: 6 * F.hour).isEmpty)  // locked window: counted nowhere
        #expect(plan.activityTotals[0].revenue["USD"] == 21)
        // Window 1 starts from zero.
        #expect(activity(Activity(sessions: 1), at: F.hour + 3 * F.day).isEmpty)
        #expect(plan.schemaValues[1] == nil)
        _ = activity(Activity(sessions: 1), at: F.hour + 4 * F.day)
        #expect(plan.schemaValues[1] == SchemaValue(fine: 2, coarse: .medium, lock: false))
        let second = plan.closeWindow(1, policy: .realTime, identifiers: Fixture.identifiers)
        #expect(second.map(\.order.coarseConversionValue) == [.medium])
        // The schema travels with the plan, in both forms.
        let decoded = try JSONCoding.decoder.decode(PostbackPlan.self, from: JSONCoding.encoder.encode(plan))
        #expect(decoded == plan)
        #expect(try CompactCoding.decode(PostbackPlan.self, from: CompactCoding.encode(plan)) == plan)
    }

    @Test func noUpdateNoWindowsNoPostbacks() {
        var plan = PostbackPlan(attribution: F.attribution(), crowd: tier3)
        for window in 0..<3 {
            let r5 = plan.closeWindow(window, policy: .realTime, identifiers: Fixture.identifiers)
            #expect(r5.isEmpty)
        }
        #expect(plan.isFinished)
    }

    /// First-update deadlines at their boundary: 48 h after a re-engagement (the end included), and for
    /// an install 60 days, which the 35-day windows make moot (a first update on day 35 finds none open).
    @Test(
        "first-update deadlines",
        arguments: [
            (ConversionType.reengagement, 48 * Fixture.hour, true),
            (.reengagement, 48 * Fixture.hour + 1, false),
            (.download, 35 * Fixture.day - 1, true),
            (.download, 35 * Fixture.day, false),
            (.redownload, 34 * Fixture.day, true),
        ] as [(ConversionType, Milliseconds, Bool)])
    func firstUpdateDeadline(_ type: ConversionType, _ at: Milliseconds, _ accepted: Bool) {
        var plan = PostbackPlan(attribution: F.attribution(type: type), crowd: tier3)
        let held = plan.apply(
            update(5, .low, lock: true, at: at), policy: .realTime, identifiers: Fixture.identifiers)
        #expect(held.isEmpty == !accepted)
        #expect((plan.firstUpdateAt != nil) == accepted)
    }

    @Test func updatesForOtherConversionTypesAreIgnored() {
        var plan = PostbackPlan(attribution: F.attribution(), crowd: tier3)
        let r7 = plan.apply(
            update(5, lock: true, at: F.hour, types: [.reengagement]), policy: .realTime, identifiers: Fixture.identifiers)
        #expect(r7.isEmpty)
        #expect(plan.firstUpdateAt == nil)
    }

    @Test func nonWinnersGetOneFirstWindowPostbackWithoutFineValueOrPublisher() {
        let other = AttributedImpression(
            adNetworkIdentifier: F.network("two.net"), impressionIdentifier: "n", sourceIdentifier: 1234,
            publisherItemIdentifier: 77, interactionType: .view, kind: .adAttributionKit)
        var plan = PostbackPlan(attribution: F.attribution(nonWinners: [other]), crowd: tier3)
        let held = plan.apply(
            update(42, .medium, lock: true, at: F.hour), policy: .realTime, identifiers: Fixture.identifiers)
        let losing = held.filter { !$0.order.payload.didWin }
        #expect(held.count == 2)
        #expect(losing.count == 1)
        #expect(losing.first?.order.payload.adNetworkIdentifier == F.network("two.net"))
        #expect(losing.first?.order.payload.sourceIdentifier == "34")
        #expect(losing.first?.order.conversionValue == nil)
        #expect(losing.first?.order.coarseConversionValue == .medium)
        #expect(losing.first?.order.payload.publisherItemIdentifier == nil)
        #expect(losing.first?.order.adInteractionType == .view)
        _ = plan.apply(update(1, .low, at: 3 * F.day), policy: .realTime, identifiers: Fixture.identifiers)
        let r8 = plan.closeWindow(1, policy: .realTime, identifiers: Fixture.identifiers)
        #expect(r8.allSatisfy { $0.order.payload.didWin })
    }

    @Test func tierZeroGetsOnlyTheFirstPostbackWithNoValue() {
        var plan = PostbackPlan(
            attribution: F.attribution(),
            crowd: CrowdAssessment(tier: .zero, sourceIdentifierDigits: 2, countryIsTierThree: false))
        let first = plan.apply(
            update(42, .high, lock: true, at: F.hour), policy: .realTime, identifiers: Fixture.identifiers)
        #expect(first.count == 1)
        #expect(first.first?.order.conversionValue == nil && first.first?.order.coarseConversionValue == nil)
        #expect(first.first?.order.payload.marketplaceIdentifier == nil)
        _ = plan.apply(update(1, .low, at: 3 * F.day), policy: .realTime, identifiers: Fixture.identifiers)
        let r9 = plan.closeWindow(1, policy: .realTime, identifiers: Fixture.identifiers)
        #expect(r9.isEmpty)
    }

    @Test func developmentWinnersUseDeveloperModeTimingsAndTheHighestTier() throws {
        let dev = AttributedImpression(
            adNetworkIdentifier: F.network("one.adattributionkit"), impressionIdentifier: "d", sourceIdentifier: 5239,
            publisherItemIdentifier: 0, interactionType: .click, kind: .adAttributionKit)
        var plan = PostbackPlan(
            attribution: F.attribution(tierWinner: dev),
            crowd: .init(tier: .zero, sourceIdentifierDigits: 2, countryIsTierThree: false))
        #expect(plan.windowEnds(policy: .realTime).map(\.at) == [180_000, 360_000, 540_000])
        let held = try #require(
            plan.apply(update(7, lock: true, at: 60_000), policy: .realTime, identifiers: Fixture.identifiers)
                .first)
        #expect((60_000 + 300_000...60_000 + 600_000).contains(held.dueAt))
        #expect(held.order.isDevelopment)
        #expect(held.order.conversionValue == 7)
        #expect(held.order.payload.sourceIdentifier == "5239")
    }

    @Test func randomizedPlansNeverCarryAFieldTheirTierForbids() {
        var generator = SeededGenerator(seed: 17)
        for _ in 0..<3_000 {
            let tier = CrowdTier(rawValue: Int.random(in: 0...3))
            let crowd = CrowdAssessment(
                tier: tier, sourceIdentifierDigits: tier >= .two ? Int.random(in: 2...4) : 2,
                countryIsTierThree: Bool.random(using: &generator))
            var plan = PostbackPlan(attribution: F.attribution(), crowd: crowd)
            var held: [HeldPostback] = []
            var time: Milliseconds = 0
            for _ in 0..<Int.random(in: 1...6) {
                time += Milliseconds.random(in: 0...(5 * F.day))
                held += plan.apply(
                    update(
                        Int.random(in: 0...63),
                        CoarseConversionValue.allCases.randomElement(using: &generator), lock: Bool.random(using: &generator),
                        at: time), policy: .realTime, identifiers: Fixture.identifiers)
            }
            for window in 0..<3 {
                held += plan.closeWindow(window, policy: .realTime, identifiers: Fixture.identifiers)
            }
            for postback in held {
                let order = postback.order
                #expect(!(order.conversionValue != nil && order.coarseConversionValue != nil))
                if order.payload.postbackSequenceIndex > 0 || tier < .two { #expect(order.conversionValue == nil) }
                if tier < .three || order.payload.postbackSequenceIndex > 0 {
                    #expect(order.payload.publisherItemIdentifier == nil)
                }
                if tier < .three || !crowd.countryIsTierThree { #expect(order.countryCode == nil) }
                if tier == .zero {
                    #expect(
                        order.payload.postbackSequenceIndex == 0 && order.coarseConversionValue == nil
                            && order.payload.marketplaceIdentifier == nil)
                }
                if tier < .two || order.payload.postbackSequenceIndex > 0 { #expect(order.payload.sourceIdentifier.count == 2) }
            }
        }
    }
}

@Suite("Random UUIDs")
struct RandomUUIDTests {
    @Test func textIsTheCanonicalLowercaseForm() {
        let bytes: [UInt8] = [
            0x00, 0x01, 0x0a, 0xff, 0x10, 0x9b, 0x4c, 0xde, 0x8f, 0x70, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc,
        ]
        #expect(RandomUUID.text(bytes[...]) == "00010aff-109b-4cde-8f70-123456789abc")
        #expect(RandomUUID.text(bytes[...]) == UUID(uuidString: RandomUUID.text(bytes[...]))?.uuidString.lowercased())
    }

    @Test("the pooled CSPRNG hands each word out once, across refills and from concurrent callers")
    func pooledWordsAreNeverHandedOutTwice() async {
        // 8 × 1,000 words cross several 512-word refills; 64-bit draws of a CSPRNG never repeat in 8,000.
        let words = await withTaskGroup(of: [UInt64].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var generator = KernelRandom()
                    return (0..<1_000).map { _ in generator.next() }
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(Set(words).count == 8_000)
        // Every bit position takes both values (a stuck or zeroed byte would not).
        #expect(words.reduce(0, |) == .max && words.reduce(.max, &) == 0)
        #expect(Set((0..<100).map { _ in RandomUUID.make() }).count == 100)
    }

    @Test func madeIdsAreVersion4AndDiffer() {
        var generator = SplitMix64(seed: 7)
        let ids = (0..<1_000).map { _ in RandomUUID.make(using: &generator) }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            let characters = Array(id)
            #expect(characters.count == 36 && characters[14] == "4" && "89ab".contains(characters[19]), "\(id)")
            #expect(UUID(uuidString: id) != nil, "\(id)")
        }
    }
}
