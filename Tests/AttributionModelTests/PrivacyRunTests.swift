import AttributionModel
import Foundation
import Testing

/// Privacy checks at model level: a seeded run of tens of thousands of conversions through the
/// real lifecycle (device events → `DeviceAttributionState` → `PostbackPlan` → held postbacks). Every held
/// postback is checked against the spec restated in `PrivacySpec` (never against `PostbackFieldGating`):
/// no field above its crowd tier, its delay inside its range, and no device identifier in its bytes.
/// Replay a run with `PRIVACY_RUN_SEED=<seed> swift test --filter PrivacyRunTests`.
@Suite("Privacy: a randomized run through the postback lifecycle")
struct PrivacyRunTests {
    /// Sized for the 10 s budget: about 4–6 s in a debug build on the 2-core machine (100,000 plans take
    /// about 17 s, for a longer hunt with `PRIVACY_RUN_PLANS`).
    static let defaultPlans = 25_000
    static let defaultSeed: UInt64 = 20_251_010

    @Test func everyHeldPostbackKeepsToItsTierAndDelayAndCarriesNoDeviceIdentifier() throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["PRIVACY_RUN_SEED"].flatMap { UInt64($0) } ?? Self.defaultSeed
        let plans = environment["PRIVACY_RUN_PLANS"].flatMap { Int($0) } ?? Self.defaultPlans
        print("privacy run: seed \(seed), \(plans) plans (override with PRIVACY_RUN_SEED, PRIVACY_RUN_PLANS)")
        let started = ContinuousClock.now
        var run = PrivacyRun(seed: seed)
        for number in 0..<plans { try run.simulate(plan: number) }
        print(run.tally.summary(plans: plans))
        let violations = run.violationCount
        #expect(
            violations == 0, "\(violations) violations (seed \(seed)); first: \(run.violations.prefix(5).joined(separator: "; "))"
        )
        for group in run.delays.keys.sorted() {
            let (n, d, critical) = PrivacySpec.kolmogorovSmirnov(uniform: run.delays[group]!)
            print("privacy run: delays \(group): n \(n), KS D \(d), critical \(critical) at α = 1e-6")
            #expect(n < 100 || d < critical, "delays \(group) are not uniform: D \(d) ≥ \(critical) (seed \(seed))")
        }
        print("privacy run: \(plans) plans in \(ContinuousClock.now - started)")
    }
}

/// The spec restated from its text (sections 4, 5, 7 and 8), deliberately without the model's rules.
enum PrivacySpec {
    static let minute: Milliseconds = 60_000
    static let hour = 60 * minute
    static let day = 24 * hour

    /// Windows end 2, 7 and 35 days after the conversion; developer mode: 3, 6 and 9 minutes.
    static func windowEnds(development: Bool) -> [Milliseconds] {
        development ? [3 * minute, 6 * minute, 9 * minute] : [2 * day, 7 * day, 35 * day]
    }

    /// "uniform random 24–48 h after its window ends or is locked", 24–144 h for postbacks 2 and 3;
    /// developer mode: exactly 5 minutes (no randomization).
    static func delayRange(window: Int, development: Bool) -> ClosedRange<Milliseconds> {
        if development { return 5 * minute...5 * minute }
        return window == 0 ? 24 * hour...48 * hour : 24 * hour...144 * hour
    }

    /// The most a postback may carry.
    struct Allowance {
        var digits: Int
        var fine: Bool
        var coarse: Bool
        var publisher: Bool
        var country: Bool
        var marketplace: Bool
    }

    /// Section 5's table, row by row; nil where no postback may exist at all.
    static func allowance(tier: Int, window: Int, didWin: Bool, assessedDigits: Int, countryTierThree: Bool) -> Allowance? {
        // "tier 0 sends no second or third postback"; non-winners get "first window only".
        if window > 0 && (tier == 0 || !didWin) { return nil }
        // "tiers 1–3 send 2 digits + coarse only"; "marketplace-identifier is omitted at tier 0".
        if window > 0 {
            return Allowance(digits: 2, fine: false, coarse: true, publisher: false, country: false, marketplace: true)
        }
        // A coarse value in place of a fine one reveals less, so it is allowed wherever the fine value is.
        let firstWinning = [
            Allowance(digits: 2, fine: false, coarse: false, publisher: false, country: false, marketplace: false),
            Allowance(digits: 2, fine: false, coarse: true, publisher: false, country: false, marketplace: true),
            Allowance(digits: assessedDigits, fine: true, coarse: true, publisher: false, country: false, marketplace: true),
            Allowance(
                digits: assessedDigits, fine: true, coarse: true, publisher: true, country: countryTierThree, marketplace: true),
        ]
        var allowance = firstWinning[tier]
        if !didWin {
            // Non-winners: "no fine value, no publisher id" (section 3), "2 digits" (section 8); the
            // spec is silent on their country code, so the tier's row bounds it.
            allowance.digits = 2
            allowance.fine = false
            allowance.publisher = false
        }
        return allowance
    }

    /// Kolmogorov–Smirnov against the uniform distribution on 0…1; critical value at α = 10⁻⁶, as in
    /// `TimingRulesTests.delaysAreUniformOverTheirRange`.
    static func kolmogorovSmirnov(uniform values: [Double]) -> (n: Int, d: Double, critical: Double) {
        let sorted = values.sorted()
        let n = Double(sorted.count)
        var d = 0.0
        for (i, x) in sorted.enumerated() { d = max(d, Double(i + 1) / n - x, x - Double(i) / n) }
        return (sorted.count, d, (-log(1e-6 / 2) / 2).squareRoot() / n.squareRoot())
    }
}

/// One seeded run: simulates conversions one device at a time and checks what each plan holds.
struct PrivacyRun {
    var generator: SplitMix64
    var tally = PrivacyTally()
    /// The first violations, for the failure message (all are counted).
    var violations: [String] = []
    var violationCount = 0
    /// Delays scaled to 0…1 within their range, by window group, for the uniformity test.
    var delays: [String: [Double]] = [:]
    let seed: UInt64

    init(seed: UInt64) {
        self.seed = seed
        generator = SplitMix64(seed: seed)
    }

    struct PostbackKey: Hashable {
        var window: Int
        var network: AdNetworkIdentifier
    }

    /// What prepared a postback, and the moment its delay counts from (its window's close).
    struct Trigger {
        var name: String
        var reference: Milliseconds
    }

    /// One conversion on its own device: impressions, attribution, then updates, activity and a
    /// possible supersede in (roughly) time order, each window's timer firing at its end.
    mutating func simulate(plan number: Int) throws {
        let seed = seed  // failure messages are built lazily, while `self` is being modified
        // A distinctive identifier per device: a marker and a random part, each searched for on its own.
        let secret = String(generator.next() | 1 << 63, radix: 16, uppercase: true)
        let device = "PRIVDEV-\(secret)"
        let development = generator.chance(0.15)
        let type = [ConversionType.download, .download, .redownload, .reengagement].randomElement(using: &generator)!
        let conversionTime = 1_750_000_000_000 + Milliseconds.random(in: 0...365 * PrivacySpec.day, using: &generator)
        let app = ItemIdentifier.random(in: 1...9_999_999_999, using: &generator)
        let country = generator.chance(0.8) ? ["US", "FR", "JP", "BR", "NG"].randomElement(using: &generator) : nil

        var state = DeviceAttributionState()
        if type == .reengagement { state.installedAt = conversionTime - 40 * PrivacySpec.day }
        var impressions: [AdNetworkIdentifier: VerifiedImpression] = [:]
        // Re-engagement credits the driving click only; installs a winner and up to 5 non-winners.
        let count = Int.random(in: 1...(type == .reengagement ? 3 : 6), using: &generator)
        for index in 0..<count {
            let impression = randomImpression(
                index, device: device, app: app, before: conversionTime, type: type, development: development)
            impressions[impression.payload.adNetworkIdentifier] = impression
            state.record(impression)
        }
        let report = ConversionReport(
            deviceIdentifier: device, advertisedItemIdentifier: app, conversionType: type, time: conversionTime,
            countryCode: country, receivedAt: conversionTime)
        let outcome = try state.attribute(
            VerifiedConversion(report: report, app: AdvertisedAppConfiguration(itemIdentifier: app)),
            conversionIdentifier: randomIdentifier(), policy: .realTime
        ).get()
        let attribution = outcome.attribution
        if attribution.isDevelopment != development { fail("plan \(number) (seed \(seed)): development winner \(!development)") }

        let tier = Int.random(in: 0...3, using: &generator)
        let crowd = CrowdAssessment(
            tier: CrowdTier(rawValue: tier), sourceIdentifierDigits: tier >= 2 ? Int.random(in: 2...4, using: &generator) : 2,
            countryIsTierThree: generator.chance(0.5))
        // Developer mode: "highest tier allowed", so 4 digits and the country.
        let expected =
            development
            ? (tier: 3, digits: 4, country: true)
            : (tier: tier, digits: crowd.sourceIdentifierDigits, country: crowd.countryIsTierThree)
        let schema = generator.chance(0.3) ? Self.schema : nil
        var plan = PostbackPlan(attribution: attribution, crowd: crowd, valueSchema: schema)
        tally.plan(attribution, tier: expected.tier)

        let ends = PrivacySpec.windowEnds(development: development)
        func window(of time: Milliseconds) -> Int { ends.firstIndex { time - conversionTime < $0 } ?? 3 }
        // Where each window's delay may count from, restated: its end, a lock in it, a superseding
        // conversion in it. Which one applies depends on the arrival order, so the plan says (`closed`),
        // and it must be one of these.
        var references = ends.map { [conversionTime + $0] }
        // The held queue as the scheduler keeps it, by postback id, with what prepared each postback;
        // a late update re-prepares a held postback in place, a second one for a window and network is a leak.
        var held: [String: (postback: HeldPostback, trigger: String)] = [:]
        var keys: Set<PostbackKey> = []
        for step in steps(device: device, app: app, conversionTime: conversionTime, ends: ends, withActivity: schema != nil) {
            let out: [HeldPostback]
            let trigger: String
            switch step {
            case .update(let report):
                guard let routed = state.receive(report) else { continue }  // filtered by conversion type: waits
                out = plan.apply(routed, policy: .realTime, identifiers: Fixture.identifiers)
                if report.update.lockPostback, window(of: report.time) < 3 {
                    references[window(of: report.time)].append(max(report.time, conversionTime))
                }
                trigger = report.update.lockPostback ? "lock" : "late update"
            case .activity(let report):
                guard let routed = state.receive(report) else { continue }
                out = plan.record(routed, policy: .realTime, identifiers: Fixture.identifiers)
                // A locking schema rule locks as of the activity.
                if window(of: report.time) < 3 { references[window(of: report.time)].append(report.time) }
                trigger = "activity"
            case .supersede(let time):
                out = plan.supersede(at: time, policy: .realTime, identifiers: Fixture.identifiers)
                if window(of: time) < 3 { references[window(of: time)].append(max(time, conversionTime)) }
                trigger = "supersede"
            case .close(let index):
                out = plan.closeWindow(index, policy: .realTime, identifiers: Fixture.identifiers)
                trigger = "window end"
            }
            for postback in out {
                let id = postback.order.payload.postbackIdentifier
                let key = PostbackKey(
                    window: postback.order.payload.postbackSequenceIndex, network: postback.order.payload.adNetworkIdentifier)
                let context = "plan \(number) (seed \(seed)), \(trigger), window \(key.window), \(key.network)"
                if let replaced = postback.replacing {
                    guard let current = held[id]?.postback, current.order == replaced.order, current.dueAt == replaced.dueAt
                    else {
                        fail("\(context): replaces a postback that is not held")
                        continue
                    }
                    if replaced.order.payload != postback.order.payload { fail("\(context): a replacement changes its payload") }
                    tally.replaced += 1
                } else if !keys.insert(key).inserted || held[id] != nil {
                    // One postback per window and network: a second one would double what a receiver learns.
                    fail("\(context): a second postback")
                }
                held[id] = (HeldPostback(order: postback.order, dueAt: postback.dueAt), trigger)
                // Every version is checked as it is made: a real run may release it before a late update swaps it.
                guard let reference = plan.closed[key.window]?.at, references[key.window].contains(reference) else {
                    fail(
                        "\(context): prepared as of \(String(describing: plan.closed[key.window]?.at)), not a close of its window"
                    )
                    continue
                }
                try check(
                    postback, trigger: Trigger(name: trigger, reference: reference),
                    attribution: attribution, impressions: impressions, expected: expected, device: device, secret: secret,
                    context: { context })
            }
        }
        // The delays the receivers see: each postback's last version, from the moment its window closed.
        for (postback, _) in held.values {
            let window = postback.order.payload.postbackSequenceIndex
            guard let reference = plan.closed[window]?.at else { continue }
            let range = PrivacySpec.delayRange(window: window, development: development)
            let scaled = Double(postback.dueAt - reference - range.lowerBound) / Double(range.upperBound - range.lowerBound)
            delays["\(development ? "development" : "production") window \(window)", default: []].append(scaled)
        }
        if !plan.isFinished { fail("plan \(number) (seed \(seed)): not finished after every window closed") }
    }

    mutating func check(
        _ postback: HeldPostback, trigger: Trigger, attribution: Attribution,
        impressions: [AdNetworkIdentifier: VerifiedImpression], expected: (tier: Int, digits: Int, country: Bool),
        device: String, secret: String, context: () -> String
    ) throws {
        let order = postback.order
        let payload = order.payload
        let window = payload.postbackSequenceIndex
        let development = attribution.isDevelopment
        tally.postback(window: window, tier: expected.tier, didWin: payload.didWin, trigger: trigger.name)
        if payload.didWin != (payload.adNetworkIdentifier == attribution.winner.adNetworkIdentifier) {
            fail("\(context()): did-win \(payload.didWin) for \(payload.adNetworkIdentifier)")
        }
        guard let impression = impressions[payload.adNetworkIdentifier] else {
            return fail("\(context()): a postback for \(payload.adNetworkIdentifier), which had no impression")
        }

        // (a) No field above the tier.
        guard
            let allowed = PrivacySpec.allowance(
                tier: expected.tier, window: window, didWin: payload.didWin, assessedDigits: expected.digits,
                countryTierThree: expected.country)
        else { return fail("\(context()): tier \(expected.tier) allows no postback here (did-win \(payload.didWin))") }
        if order.conversionValue != nil && !allowed.fine { fail("\(context()): fine value at tier \(expected.tier)") }
        if order.coarseConversionValue != nil && !allowed.coarse { fail("\(context()): coarse value at tier \(expected.tier)") }
        if order.conversionValue != nil && order.coarseConversionValue != nil { fail("\(context()): fine and coarse values") }
        if let fine = order.conversionValue, !(0...63).contains(fine) { fail("\(context()): fine value \(fine)") }
        if payload.publisherItemIdentifier != nil && !allowed.publisher {
            fail("\(context()): publisher at tier \(expected.tier)")
        }
        if order.countryCode != nil && !allowed.country { fail("\(context()): country code at tier \(expected.tier)") }
        if payload.marketplaceIdentifier != nil && !allowed.marketplace { fail("\(context()): marketplace at tier 0") }
        // The source id: at most the allowed digits, and the least-significant ones (what the crowds counted).
        let source = payload.sourceIdentifier
        let full = String(repeating: "0", count: 4) + String(impression.payload.sourceIdentifier)
        if !(2...allowed.digits).contains(source.count) || !full.hasSuffix(source) {
            fail("\(context()): source id \(source) of \(impression.payload.sourceIdentifier), \(allowed.digits) digits allowed")
        }

        // (b) The delay counts from the window end or the lock, within its range.
        let range = PrivacySpec.delayRange(window: window, development: development)
        let delay = postback.dueAt - trigger.reference
        if !range.contains(delay) { fail("\(context()): delay \(delay) ms outside \(range)") }

        // (c) No device identifier in any byte held: the compact form and the JSON order.
        let compact = Data(CompactHeldPostback.encode(order, dueAt: postback.dueAt))
        let json = try JSONCoding.encoder.encode(order)
        // The marker finds any copy that starts like the identifier, the random part one without the marker.
        for needle in [Data("PRIVDEV".utf8), Data(secret.utf8)] {
            if compact.range(of: needle) != nil { fail("\(context()): device identifier \(device) in the compact form") }
            if json.range(of: needle) != nil { fail("\(context()): device identifier \(device) in the JSON order") }
        }
        tally.bytesSearched += compact.count + json.count
    }

    // MARK: - The simulated device

    mutating func randomImpression(
        _ index: Int, device: String, app: ItemIdentifier, before conversion: Milliseconds, type: ConversionType,
        development: Bool
    ) -> VerifiedImpression {
        let kind: ImpressionKind = generator.chance(0.3) ? .skAdNetwork : .adAttributionKit
        let network = AdNetworkIdentifier("network\(index).\(kind == .skAdNetwork ? "skadnetwork" : "adattributionkit")")!
        // Re-engagement takes clicks only; a view attributes within 1 day, a click within 30.
        let click = type == .reengagement || generator.chance(0.6)
        let time = conversion - .random(in: 1...(click ? 29 * PrivacySpec.day : 23 * PrivacySpec.hour), using: &generator)
        // A production conversion keeps its first impression a production one: it beats any development one.
        let publisher: ItemIdentifier =
            development || (index > 0 && generator.chance(0.1)) ? 0 : .random(in: 1...9_999_999_999, using: &generator)
        let digits = Int.random(in: 0...2, using: &generator)
        let source = Int.random(in: [10, 100, 1_000][digits]...[99, 999, 9_999][digits], using: &generator)
        return VerifiedImpression(
            deviceIdentifier: device,
            payload: ImpressionPayload(
                impressionIdentifier: randomIdentifier(), adNetworkIdentifier: network,
                advertisedItemIdentifier: app, publisherItemIdentifier: publisher, sourceIdentifier: source, timestamp: time,
                eligibleForReengagement: type == .reengagement || generator.chance(0.5)),
            interaction: click ? .click(at: time, loadedAt: time - 1_000) : .view(begin: time - 5_000, end: time),
            kind: kind)
    }

    enum Step {
        case update(ValueUpdateReport)
        case activity(ActivityReport)
        case supersede(Milliseconds)
        case close(Int)
    }

    /// The conversion's events in the order the scheduler processes them: a quarter of the reports
    /// arrive late (up to 36 h; 1.5 minutes in developer mode), each window's timer fires just after its end.
    mutating func steps(
        device: String, app: ItemIdentifier, conversionTime: Milliseconds, ends: [Milliseconds], withActivity: Bool
    ) -> [Step] {
        var timed: [(at: Milliseconds, step: Step)] = []
        let lag = ends[0] * 3 / 4
        func late(_ generator: inout SplitMix64) -> Milliseconds {
            generator.chance(0.25) ? .random(in: 0...lag, using: &generator) : 0
        }
        for _ in 0..<Int.random(in: 0...6, using: &generator) {
            let time = randomTime(after: conversionTime, ends: ends)
            let update = PostbackUpdate(
                fineConversionValue: .random(in: 0...63, using: &generator),
                coarseConversionValue: generator.chance(0.7)
                    ? CoarseConversionValue.allCases.randomElement(using: &generator) : nil,
                lockPostback: generator.chance(0.15), conversionTypes: generator.chance(0.1) ? [.install] : nil)
            let arrival = time + late(&generator)
            let report = ValueUpdateReport(
                deviceIdentifier: device, advertisedItemIdentifier: app, update: update, time: time, receivedAt: arrival)
            timed.append((arrival, .update(report)))
        }
        for _ in 0..<(withActivity ? Int.random(in: 0...4, using: &generator) : 0) {
            let time = randomTime(after: conversionTime, ends: ends)
            let activity = Activity(
                sessions: .random(in: 1...2, using: &generator),
                revenue: generator.chance(0.3) ? ["USD": Decimal(Int.random(in: 1...25, using: &generator))] : nil)
            let arrival = time + late(&generator)
            let report = ActivityReport(
                deviceIdentifier: device, advertisedItemIdentifier: app, activity: activity, time: time, receivedAt: arrival)
            timed.append((arrival, .activity(report)))
        }
        if generator.chance(0.1) {
            let time = randomTime(after: conversionTime, ends: ends)
            timed.append((time, .supersede(time)))
        }
        let grace = ends[0] / 10_000
        for (index, end) in ends.enumerated() { timed.append((conversionTime + end + grace, .close(index))) }
        return timed.sorted { $0.at < $1.at }.map(\.step)
    }

    /// An opaque id for impressions and conversions: its form does not matter to the rules.
    mutating func randomIdentifier() -> String { String(generator.next(), radix: 16) }

    /// A time in a random window or after the last, now and then exactly on a window's edge.
    mutating func randomTime(after conversion: Milliseconds, ends: [Milliseconds]) -> Milliseconds {
        let window = Int.random(in: 0...3, using: &generator)
        let start = window == 0 ? 0 : ends[window - 1]
        let stop = window < 3 ? ends[window] : ends[2] + ends[0]
        if generator.chance(0.05) { return conversion + (generator.chance(0.5) ? start : stop - 1) }
        return conversion + .random(in: start..<stop, using: &generator)
    }

    /// Sessions and revenue become values; enough revenue or sessions lock a window.
    static let schema = ConversionValueSchema(windows: [
        .init(
            window: 0,
            rules: [
                .init(when: .init(revenue: ["USD": 20]), fine: 60, coarse: .high, lock: true),
                .init(when: .init(sessions: 3), fine: 21, coarse: .medium),
                .init(when: .init(sessions: 1), fine: 1, coarse: .low),
            ]),
        .init(
            window: 1,
            rules: [
                .init(when: .init(sessions: 3), fine: 30, coarse: .high, lock: true),
                .init(when: .init(sessions: 1), fine: 2, coarse: .low),
            ]),
        .init(window: 2, rules: [.init(when: .init(revenue: ["USD": 10]), fine: 50, coarse: .high)]),
    ])

    mutating func fail(_ message: @autoclosure () -> String) {
        violationCount += 1
        if violations.count < 20 { violations.append(message()) }
    }
}

/// What the run covered, printed with its results.
struct PrivacyTally {
    var development = 0
    var conversionTypes: [String: Int] = [:]
    var nonWinners = [Int](repeating: 0, count: 6)
    var planTiers = [Int](repeating: 0, count: 4)
    /// Postbacks checked, by window and tier.
    var postbacks = [[Int]](repeating: [Int](repeating: 0, count: 4), count: 3)
    var winning = 0
    var triggers: [String: Int] = [:]
    /// Held postbacks re-prepared in place by late updates (values or, for a late lock, due time).
    var replaced = 0
    var bytesSearched = 0

    mutating func plan(_ attribution: Attribution, tier: Int) {
        if attribution.isDevelopment { development += 1 }
        conversionTypes[attribution.conversionType.rawValue, default: 0] += 1
        nonWinners[attribution.nonWinners.count] += 1
        planTiers[tier] += 1
    }

    mutating func postback(window: Int, tier: Int, didWin: Bool, trigger: String) {
        postbacks[window][tier] += 1
        if didWin { winning += 1 }
        triggers[trigger, default: 0] += 1
    }

    func summary(plans: Int) -> String {
        let total = postbacks.joined().reduce(0, +)
        func listed(_ counts: [String: Int]) -> String {
            counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }
        let lines = [
            "privacy run: \(plans) plans (\(development) development; \(listed(conversionTypes)));"
                + " non-winners 0…5 \(nonWinners); plan tiers 0…3 \(planTiers)",
            "privacy run: \(total) postbacks checked (\(winning) winning, \(total - winning) non-winning;"
                + " \(listed(triggers)); \(replaced) re-prepared by late updates); \(bytesSearched) held bytes searched"
                + " for device identifiers",
        ]
        let windows = postbacks.enumerated().map { "privacy run: window \($0.offset) postbacks by tier 0…3 \($0.element)" }
        return (lines + windows).joined(separator: "\n")
    }
}
