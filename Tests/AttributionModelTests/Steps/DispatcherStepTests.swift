import AttributionModel
import Testing

/// The dispatcher's step: destinations, and what each answer to a POST means.
@Suite struct DispatcherStepTests {
    let step = DispatcherStep(policy: .realTime)

    static let delivery = DeliveryRetry(
        postbackIdentifier: "p", url: "https://one.example/postbacks", body: "{}", attempts: 0, firstAttemptAt: 0, lastError: "",
        order: PostbackPlanTestsOrder.make())

    @Test(arguments: [
        (DispatcherStep.Response.delivered, 0, "delivered", "delivered"),
        (.status(500), 0, "retry", "http-error"),
        (.transportError("timeout"), 0, "retry", "transport-error"),
        // Retrying cannot make a private address public; a name that did not resolve may resolve later.
        (.refused(.privateAddress), 0, "dead", "refused-destination"),
        (.refused(.unresolvable), 0, "retry", "refused-destination"),
        // The 10th failure: the 9 retries are spent.
        (.status(503), 9, "dead", "http-error"),
    ])
    func verdicts(response: DispatcherStep.Response, previousAttempts: Int, expected: String, outcome: String) {
        var delivery = Self.delivery
        delivery.attempts = previousAttempts
        var generator = SeededGenerator(seed: 7)
        let (verdict, count) = step.verdict(for: delivery, response: response, now: 1_000, using: &generator)
        #expect(count == .delivery(DeliveryOutcome(rawValue: outcome)!, attempt: min(previousAttempts + 1, 10)))
        switch verdict {
        case .delivered: #expect(expected == "delivered")
        case .retry(let retry, let at):
            #expect(expected == "retry")
            #expect(retry.attempts == previousAttempts + 1 && !retry.lastError.isEmpty)
            let base = TimePolicy.realTime.milliseconds(RetrySchedule.baseIntervals[previousAttempts])
            #expect((1_000 + base)...(1_000 + base + base / 5) ~= at, "the wait counts from the failure")
        case .dead(let record, let reason):
            #expect(expected == "dead")
            #expect(record.lastError == reason)
        }
    }

    @Test func aReplayedDeadLetterIsSignedAgain() {
        var replay = Self.delivery
        replay.replayed = true
        let order = replay.order
        let outcome = step.work(
            for: Envelope(time: 0, body: .deliveryRetry(replay)), networks: Self.registered(order), apps: [:], now: 77,
            sign: { _ in "fresh" })
        guard case .done(let work) = outcome, let retry = work.deliveries.first else {
            Issue.record("one delivery")
            return
        }
        #expect(retry.body == "fresh" && retry.firstAttemptAt == 77 && retry.replayed == nil)
    }

    static func registered(_ order: PostbackOrder, url: String = "https://one.example/postbacks") -> [String:
        AdNetworkRegistration]
    {
        let id = order.payload.adNetworkIdentifier
        return [id.rawValue: AdNetworkRegistration(adNetworkIdentifier: id, publicKey: "{}", postbackURL: url)]
    }

    /// A retry after its network or app was deleted gets no more attempts (dead-lettered); a replay goes
    /// to the destination's URL as registered now.
    @Test(arguments: [
        // destination, network registered, app with a copy endpoint, replayed → URL sent to, or the reason
        (PostbackDestination.adNetwork, true, false, false, "https://stored.example/p"),
        (.adNetwork, false, false, false, "ad network"),
        (.adNetwork, true, false, true, "https://now.example/postbacks"),
        (.adNetwork, false, false, true, "ad network"),
        (.advertiserCopy, true, true, false, "https://stored.example/p"),
        (.advertiserCopy, true, false, false, "advertised app"),
        (.advertiserCopy, true, true, true, "the copy endpoint now"),
    ])
    func retriesFollowTheRegistry(
        destination: PostbackDestination, network: Bool, app: Bool, replayed: Bool, expected: String
    ) {
        let order = PostbackPlanTestsOrder.make()
        var retry = Self.delivery
        retry.url = "https://stored.example/p"
        retry.destination = destination
        retry.attempts = 2
        retry.order = order
        retry.replayed = replayed ? true : nil
        var configuration = AdvertisedAppConfiguration(itemIdentifier: order.payload.advertisedItemIdentifier)
        configuration.attributionCopyEndpoint = "https://copies.example"
        let apps = app ? [String(order.payload.advertisedItemIdentifier): configuration] : [:]
        let outcome = step.work(
            for: Envelope(time: 0, body: .deliveryRetry(retry)),
            networks: network ? Self.registered(order, url: "https://now.example/postbacks") : [:], apps: apps, now: 5,
            sign: { _ in "signed" })
        guard case .done(let work) = outcome else {
            Issue.record("work")
            return
        }
        if expected.hasPrefix("https://") || expected == "the copy endpoint now" {
            let url =
                expected.hasPrefix("https://")
                ? expected : CopyEndpoint.reportURL(for: "https://copies.example", suffixes: PublicSuffixList())
            #expect(work.deliveries.map(\.url) == [url] && work.undeliverable.isEmpty)
        } else {
            #expect(work.deliveries.isEmpty)
            #expect(work.undeliverable.count == 1 && work.undeliverable[0].reason.hasPrefix(expected), "\(work.undeliverable)")
        }
    }

    @Test func anUnregisteredNetworkIsUndeliverable() {
        let order = PostbackPlanTestsOrder.make()
        let outcome = step.work(
            for: Envelope(time: 0, body: .postbackDue(order)), networks: [:], apps: [:], now: 5, sign: { _ in "signed" })
        guard case .done(let work) = outcome else {
            Issue.record("work")
            return
        }
        #expect(work.deliveries.isEmpty)
        #expect(work.undeliverable.map(\.reason) == ["ad network \(order.payload.adNetworkIdentifier) is not registered"])
    }
}

/// A postback order from a plan, for the dispatcher's tables.
enum PostbackPlanTestsOrder {
    static func make() -> PostbackOrder {
        var plan = PostbackPlan(attribution: Fixture.attribution(at: 0), crowd: .development)
        _ = plan.apply(
            AttributedUpdate(conversionIdentifier: "c-1", update: PostbackUpdate(fineConversionValue: 5), time: 1),
            policy: .realTime, identifiers: Fixture.identifiers)
        let held = plan.closeWindow(0, policy: .realTime, identifiers: Fixture.identifiers)
        return held[0].order
    }
}
