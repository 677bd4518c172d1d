import AttributionModel
import Testing

/// The dispatcher's step: destinations, and what each answer to a POST means.
@Suite struct DispatcherStepTests {
    let step = DispatcherStep(policy: .realTime)

    static let delivery = DeliveryRetry(
        postbackIdentifier: "p", url: "https://one.example/postbacks", body: "{}", attempts: 0, firstAttemptAt: 0, lastError: "")

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
        replay.order = nil
        let order = PostbackPlanTestsOrder.make()
        replay.order = order
        let outcome = step.work(
            for: Envelope(time: 0, body: .deliveryRetry(replay)), networks: [:], apps: [:], now: 77, sign: { _ in "fresh" })
        guard case .done(let work) = outcome, let retry = work.deliveries.first else {
            Issue.record("one delivery")
            return
        }
        #expect(retry.body == "fresh" && retry.firstAttemptAt == 77 && retry.replayed == nil)
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
        var generator = SeededGenerator(seed: 9)
        _ = plan.apply(
            AttributedUpdate(conversionIdentifier: "c-1", update: PostbackUpdate(fineConversionValue: 5), time: 1),
            policy: .realTime, using: &generator)
        let held = plan.closeWindow(0, policy: .realTime, using: &generator)
        return held[0].order
    }
}
