import AttributionModel
import Testing

/// A destination's circuit breaker, and what the dispatcher's step does with deliveries it holds back
/// and with attempts whose outcome was never written.
@Suite struct DestinationCircuitTests {
    static let timeout: Milliseconds = 10_000
    static let minute: Milliseconds = 60_000

    func fail(_ circuit: inout DestinationCircuit, times: Int, at now: Milliseconds) {
        for _ in 0..<times { circuit.record(failed: true, now: now, policy: .realTime, timeout: Self.timeout) }
    }

    @Test func fiveFailuresInARowOpenItForTheFirstCooldown() {
        var circuit = DestinationCircuit()
        fail(&circuit, times: 4, at: 0)
        #expect(circuit.admit(now: 1, timeout: Self.timeout) == .send(probe: false), "4 failures leave it closed")
        circuit.record(failed: false, now: 2, policy: .realTime, timeout: Self.timeout)
        fail(&circuit, times: 4, at: 3)
        #expect(!circuit.isOpen, "an answer in between starts the count again")
        fail(&circuit, times: 1, at: 5)
        #expect(circuit.state == .open(until: 5 + Self.minute))
        #expect(circuit.admit(now: 6, timeout: Self.timeout) == .wait(until: 5 + Self.minute))
    }

    @Test func oneProbeGoesAfterTheCooldownAndDecides() {
        var circuit = DestinationCircuit()
        fail(&circuit, times: 5, at: 0)
        #expect(circuit.admit(now: Self.minute, timeout: Self.timeout) == .send(probe: true))
        #expect(
            circuit.admit(now: Self.minute + 1, timeout: Self.timeout) == .wait(until: Self.minute + 1 + Self.timeout),
            "one probe at a time: the others come back when it must have ended")
        // A failed probe doubles the cooldown.
        fail(&circuit, times: 1, at: Self.minute + 10)
        #expect(circuit.state == .open(until: Self.minute + 10 + 2 * Self.minute))
        #expect(circuit.admit(now: 3 * Self.minute + 10, timeout: Self.timeout) == .send(probe: true))
        circuit.record(failed: false, now: 3 * Self.minute + 20, policy: .realTime, timeout: Self.timeout)
        #expect(circuit.state == .closed && circuit.consecutiveFailures == 0)
    }

    @Test func cooldownsDoubleUpToAnHourAndNeverUnderOneTimeout() {
        var circuit = DestinationCircuit()
        fail(&circuit, times: 5, at: 0)
        var now: Milliseconds = 0
        var cooldowns: [Milliseconds] = []
        for _ in 0..<10 {
            guard case .open(let until) = circuit.state else { break }
            cooldowns.append(until - now)
            now = until
            _ = circuit.admit(now: now, timeout: Self.timeout)
            fail(&circuit, times: 1, at: now)
        }
        #expect(Array(cooldowns.prefix(8)) == [1, 2, 4, 8, 16, 32, 60, 60].map { $0 * Self.minute })
        // At TIME_SCALE 86400 a minute lasts under 1 ms: the delivery timeout is the floor.
        var scaled = DestinationCircuit()
        for _ in 0..<5 { scaled.record(failed: true, now: 0, policy: TimePolicy(scale: 86_400), timeout: Self.timeout) }
        #expect(scaled.state == .open(until: Self.timeout))
    }

    @Test func onlyAnAttemptWithoutAnAnswerCountsAgainstTheDestination() {
        #expect(DispatcherStep.Response.transportError("timed out").showsTheDestinationDown)
        for answered in [DispatcherStep.Response.delivered, .status(503), .status(429), .status(404), .refused(.privateAddress)] {
            #expect(!answered.showsTheDestinationDown, "\(answered)")
        }
    }

    @Test func aDeferredDeliveryKeepsItsRetriesUntilItsNineDaysPass() {
        let step = DispatcherStep(policy: .realTime)
        var delivery = DispatcherStepTests.delivery
        delivery.attempts = 3
        let nineDays = TimePolicy.realTime.milliseconds(RetrySchedule.limit)
        #expect(
            step.deferral(of: delivery, until: 1_000, reason: "circuit open", now: 0)
                == .retry(
                    {
                        var kept = delivery
                        kept.lastError = "circuit open"
                        return kept
                    }(), at: 1_000))
        // Decided before its 9 days end, a wait that ends after them is still a wait.
        guard case .retry = step.deferral(of: delivery, until: nineDays + 10_000, reason: "busy", now: nineDays - 1) else {
            Issue.record("a postback whose days are not over is not ended by a wait")
            return
        }
        guard
            case .dead(let record, let reason) = step.deferral(
                of: delivery, until: nineDays + 2, reason: "circuit open", now: nineDays + 1)
        else {
            Issue.record("past its 9 days a deferral dead-letters it")
            return
        }
        #expect(record.attempts == 3 && reason.hasPrefix("circuit open"))
    }

    @Test func anInFlightRecordReleasedIsAFailedAttemptNotSentAgainAtOnce() {
        let step = DispatcherStep(policy: .realTime)
        let record = DispatcherStep.inFlightRecord(for: DispatcherStepTests.delivery)
        #expect(record.inFlight == true)
        guard
            case .done(let work) = step.work(
                for: Envelope(time: 0, body: .deliveryRetry(record)), networks: [:], apps: [:], now: 5, sign: { _ in "" })
        else {
            Issue.record("a released in-flight record is work")
            return
        }
        #expect(work.deliveries.isEmpty && work.lost.count == 1 && work.lost[0].inFlight == nil)
        var generator = SeededGenerator(seed: 1)
        let (verdict, _) = step.verdict(for: work.lost[0], response: DispatcherStep.lostAttempt, now: 5, using: &generator)
        guard case .retry(let retry, let at) = verdict else {
            Issue.record("a lost attempt is retried on the schedule")
            return
        }
        #expect(retry.attempts == 1 && at >= 5 + Self.minute)
    }
}
