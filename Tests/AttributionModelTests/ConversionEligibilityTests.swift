import AttributionModel
import Testing

@Suite("Conversion eligibility: re-engagement, cooldowns, caps, tags, overlapping conversions")
struct ConversionEligibilityTests {
    typealias F = Fixture
    static let hour = Fixture.hour
    static let day = Fixture.day
    let hour = Fixture.hour
    let day = Fixture.day

    static func conversion(
        _ type: ConversionType, at time: Milliseconds, tag: String? = nil, cooldown: AttributionCooldown? = nil,
        overlapping: Bool? = nil
    ) -> VerifiedConversion {
        VerifiedConversion(
            report: ConversionReport(
                deviceIdentifier: "device-1", advertisedItemIdentifier: F.app, conversionType: type, time: time,
                receivedAt: time, conversionTag: tag),
            app: AdvertisedAppConfiguration(
                itemIdentifier: F.app, attributionCooldown: cooldown, eligibleForOverlappingConversions: overlapping))
    }

    static func refusal(_ result: Result<DeviceAttributionState.Outcome, ConversionEligibility.Refusal>)
        -> ConversionEligibility.Refusal?
    {
        if case .failure(let refusal) = result { return refusal }
        return nil
    }

    /// A state with an attributed install at t = 0 and eligible clicks before each later time.
    static func installed(clicksAt times: [Milliseconds]) -> DeviceAttributionState {
        var state = DeviceAttributionState()
        state.record(F.impression("install-click", at: -hour))
        _ = state.attribute(conversion(.download, at: 0), conversionIdentifier: "install", policy: .realTime)
        for (n, time) in times.enumerated() {
            state.record(F.impression("re-\(n)", network: "net\(n).x", at: time - 60_000, reengagement: true))
        }
        return state
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        var type: ConversionType = .reengagement
        let at: Milliseconds
        var cooldown: AttributionCooldown? = nil
        var installed = true
        var deviceReengagements: [Milliseconds] = []
        let refusal: ConversionEligibility.Refusal?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "re-engagement of an installed app with an eligible click", at: 2 * day, refusal: nil),
        // The app reporting a re-engagement is running: no install seen is needed (spec section 3).
        Case(name: "re-engagement without an install seen", at: 2 * day, installed: false, refusal: nil),
        Case(
            name: "inside the install cooldown", at: 23 * hour, cooldown: .init(installCooldownHours: 24),
            refusal: .cooldown),
        Case(
            name: "exactly at the end of the install cooldown", at: 24 * hour, cooldown: .init(installCooldownHours: 24),
            refusal: nil),
        Case(
            name: "re-engagement cooldown does not apply after an install", at: hour,
            cooldown: .init(reengagementCooldownHours: 720), refusal: nil),
        Case(
            name: "a redownload inside the install cooldown", type: .redownload, at: 2 * hour,
            cooldown: .init(installCooldownHours: 3), refusal: .cooldown),
        Case(
            name: "20 re-engagements on this device in the last year", at: 2 * day,
            deviceReengagements: (0..<20).map { Milliseconds($0) * 10 * day - 300 * day }, refusal: .deviceReengagementCap),
        Case(
            name: "20 re-engagements, the oldest just over a year ago", at: 2 * day,
            deviceReengagements: [2 * day - 365 * day] + (1..<20).map { Milliseconds($0) * 10 * day - 300 * day }, refusal: nil),
    ]

    @Test(arguments: cases)
    func decides(_ c: Case) {
        var state = c.installed ? Self.installed(clicksAt: [c.at]) : DeviceAttributionState()
        if !c.installed { state.record(F.impression("re-0", network: "net0.x", at: c.at - 60_000, reengagement: true)) }
        if c.type != .reengagement { state.record(F.impression("other-click", network: "net9.x", at: c.at - 60_000)) }
        let result = state.attribute(
            Self.conversion(c.type, at: c.at, cooldown: c.cooldown), conversionIdentifier: "new",
            deviceReengagements: c.deviceReengagements, policy: .realTime)
        switch result {
        case .success: #expect(c.refusal == nil)
        case .failure(let refusal): #expect(refusal == c.refusal)
        }
    }

    @Test func twoReengagementsPerAppIn30DaysThenTheCapThenAgainAfter30Days() {
        let times = [2 * day, 3 * day, 4 * day, 33 * day]
        var state = Self.installed(clicksAt: times)
        let outcomes = times.enumerated().map { n, time in
            state.attribute(Self.conversion(.reengagement, at: time), conversionIdentifier: "re-\(n)", policy: .realTime)
        }
        #expect(outcomes.map(Self.refusal) == [nil, nil, .appReengagementCap, nil])
    }

    @Test func reengagementCooldownAfterAReengagement() {
        var state = Self.installed(clicksAt: [2 * day, 2 * day + 5 * hour, 2 * day + 7 * hour])
        let cooldown = AttributionCooldown(reengagementCooldownHours: 6)
        let results = [2 * day, 2 * day + 5 * hour, 2 * day + 7 * hour].enumerated().map { n, time in
            state.attribute(
                Self.conversion(.reengagement, at: time, cooldown: cooldown), conversionIdentifier: "re-\(n)", policy: .realTime)
        }
        #expect(results.map(Self.refusal) == [nil, .cooldown, nil])
    }

    @Test func developmentWinnersHaveNoReengagementCaps() {
        var state = Self.installed(clicksAt: [])
        for n in 0..<3 {
            state.record(F.impression("dev-\(n)", at: 2 * day + Milliseconds(n) * hour - 1, publisher: 0, reengagement: true))
        }
        let results = (0..<3).map { n in
            state.attribute(
                Self.conversion(.reengagement, at: 2 * day + Milliseconds(n) * hour), conversionIdentifier: "d\(n)",
                policy: .realTime)
        }
        #expect(results.allSatisfy { if case .success = $0 { true } else { false } })
    }

    @Test func withoutTheOptInAReengagementSupersedesEarlierConversions() throws {
        var state = Self.installed(clicksAt: [2 * day, 3 * day])
        let first = try state.attribute(
            Self.conversion(.reengagement, at: 2 * day, tag: "tag-1"), conversionIdentifier: "re-1", policy: .realTime
        ).get()
        #expect(first.superseded == ["install"])
        #expect(first.attribution.conversionTag == "tag-1")
        #expect(first.attribution.nonWinners.isEmpty, "re-engagement credits only the driving impression")
        let second = try state.attribute(
            Self.conversion(.reengagement, at: 3 * day, tag: "tag-2"), conversionIdentifier: "re-2", policy: .realTime
        ).get()
        #expect(second.superseded == ["install", "re-1"])
    }

    @Test func withTheOptInConversionsOverlap() throws {
        var state = Self.installed(clicksAt: [2 * day])
        let outcome = try state.attribute(
            Self.conversion(.reengagement, at: 2 * day, overlapping: true), conversionIdentifier: "re", policy: .realTime
        ).get()
        #expect(outcome.superseded.isEmpty)
    }

    @Test func updatesFollowTheirConversionTagOrTheMostRecentConversion() throws {
        var state = Self.installed(clicksAt: [2 * day, 3 * day])
        _ = try state.attribute(
            Self.conversion(.reengagement, at: 2 * day, tag: "tag-1", overlapping: true), conversionIdentifier: "re-1",
            policy: .realTime
        ).get()
        _ = try state.attribute(
            Self.conversion(.reengagement, at: 3 * day, tag: "tag-2", overlapping: true), conversionIdentifier: "re-2",
            policy: .realTime
        ).get()
        func update(tag: String?, types: [ConversionKind]? = nil) -> String? {
            state.receive(
                ValueUpdateReport(
                    deviceIdentifier: "device-1", advertisedItemIdentifier: F.app,
                    update: PostbackUpdate(fineConversionValue: 1, conversionTypes: types, conversionTag: tag), time: 4 * day,
                    receivedAt: 4 * day))?.conversionIdentifier
        }
        #expect(update(tag: "tag-1") == "re-1")
        #expect(update(tag: nil) == "re-2")
        #expect(update(tag: nil, types: [.install]) == "install")
        #expect(update(tag: "unknown") == nil, "kept until a conversion with that tag exists")
    }

    @Test func supersededPlanLocksTheOpenWindowAndClosesTheRest() {
        var plan = PostbackPlan(
            attribution: F.attribution(), crowd: .init(tier: .three, sourceIdentifierDigits: 4, countryIsTierThree: true))
        _ = plan.apply(
            AttributedUpdate(
                conversionIdentifier: "c-1", update: .init(fineConversionValue: 9, coarseConversionValue: .low), time: hour),
            policy: .realTime, identifiers: Fixture.identifiers)
        // An update in window 1, so that the window has a postback to prepare.
        _ = plan.apply(
            AttributedUpdate(
                conversionIdentifier: "c-1", update: .init(fineConversionValue: 12, coarseConversionValue: .high),
                time: 3 * day + hour),
            policy: .realTime, identifiers: Fixture.identifiers)
        let held = plan.supersede(at: 4 * day, policy: .realTime, identifiers: Fixture.identifiers)
        #expect(held.map(\.order.payload.postbackSequenceIndex) == [1], "window 1 (days 3–7) locked now")
        #expect(held.allSatisfy { (4 * day + 24 * hour...4 * day + 144 * hour).contains($0.dueAt) })
        #expect(plan.windowsDone == [false, true, true], "window 0 still closes on its own timer")
        let closing = plan.closeWindow(0, policy: .realTime, identifiers: Fixture.identifiers)
        #expect(closing.count == 1)
        #expect(plan.isFinished)
    }
}
