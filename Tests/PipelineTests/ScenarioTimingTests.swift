import AttributionModel
import TestSupport
import Testing

/// The scenario suite's timing judgement (`ScenarioPipelineRunner.timing`) on its own: what the
/// pipeline recorded decides, and a postback early against its delay or its due time always fails.
@Suite("Scenario timing against the pipeline's records")
struct ScenarioTimingTests {
    let base: Milliseconds = 1_000_000

    /// A production scenario's first expected postback, its plan, its preparation time and delay range.
    func fixture() throws -> (ScenarioPlan, ExpectedPostback, Milliseconds, ClosedRange<Milliseconds>) {
        for (number, file) in try Scenario.all().enumerated() {
            guard case .success(let plan) = ScenarioPlan.make(name: file.name, scenario: file.scenario, number: number),
                !plan.kind.development, let expected = plan.scenario.expected.postbacks.first
            else { continue }
            let range = ScenarioPipelineRunner.delayRange(expected, plan: plan)
            return (plan, expected, base + plan.real(expected.preparedAt), range)
        }
        throw TestSupportError("no production scenario with a postback")
    }

    func judge(received: Milliseconds, due: Milliseconds?, released: Milliseconds? = nil) throws -> [String] {
        let (plan, expected, _, _) = try fixture()
        let release = due.map { PostbackRelease(dueAt: $0, releasedAt: released ?? $0 + 50) }
        return ScenarioPipelineRunner.timing(
            receivedAt: received, expected: expected, release: release, plan: plan, base: base)
    }

    @Test func aPostbackDueInItsRangeAndDeliveredOnceReleasedPasses() throws {
        let (_, _, prepared, range) = try fixture()
        #expect(try judge(received: prepared + range.lowerBound + 100, due: prepared + range.lowerBound) == [])
        #expect(try judge(received: prepared + range.upperBound + 100, due: prepared + range.upperBound) == [])
    }

    @Test func aPostbackReleasedLateButWithinTheLimitPasses() throws {
        // The scheduler wrote it 1 s after it was due (a loaded machine); it still arrived in time.
        let (_, _, prepared, range) = try fixture()
        let due = prepared + range.lowerBound
        #expect(try judge(received: due + 1_100, due: due, released: due + 1_000) == [])
    }

    @Test func aDueTimeBeforeTheMinimumDelayFails() throws {
        let (_, _, prepared, range) = try fixture()
        let due = prepared + range.lowerBound - ScenarioPipelineRunner.dueTolerance - 1
        let problems = try judge(received: due + 100, due: due)
        #expect(problems.count == 1 && problems[0].contains("the scheduler set it due"), "\(problems)")
    }

    @Test func aDueTimePastTheMaximumDelayFails() throws {
        let (_, _, prepared, range) = try fixture()
        let due = prepared + range.upperBound + ScenarioPipelineRunner.dueTolerance + 1
        #expect(try judge(received: due + 100, due: due).count == 1)
    }

    @Test func aPostbackReceivedBeforeItsDueTimeFails() throws {
        let (_, _, prepared, range) = try fixture()
        let due = prepared + range.lowerBound
        let problems = try judge(received: due - 1, due: due, released: due - 1)
        #expect(problems.count == 1 && problems[0].contains("before the due time"), "\(problems)")
    }

    @Test func aPostbackArrivingPastTheLimitAfterItsDueTimeFails() throws {
        let (_, _, prepared, range) = try fixture()
        let due = prepared + range.upperBound
        let released = due + 1_000
        let late = try judge(received: due + ScenarioPipelineRunner.lateLimit + 1, due: due, released: released)
        #expect(late.count == 1 && late[0].contains("after the due time the scheduler recorded"), "\(late)")
    }

    @Test func aPostbackWithoutARecordedReleaseFails() throws {
        let (_, _, prepared, range) = try fixture()
        #expect(try judge(received: prepared + range.lowerBound, due: nil).count == 1)
    }

    @Test func lateUpdatesOnTheSchedulersMetricsAreSummed() {
        let metrics = """
            # TYPE scheduler_late_postbacks_total counter
            scheduler_late_postbacks_total{change="prepared"} 3
            scheduler_late_postbacks_total{change="too-late"} 2
            scheduler_postbacks_total 40
            """
        #expect(PipelineLateness.latePostbacks(metrics: metrics) == 5)
        #expect(PipelineLateness(latePostbacks: 0, latestRelease: 100, longestSettle: 10).fellBehind == false)
        #expect(PipelineLateness(latePostbacks: 1).fellBehind)
    }
}
