import AttributionModel
import Foundation
import TestSupport
import Testing

/// Every scenario in `Scenarios/` against the pure rules, under a virtual clock.
@Suite struct ScenarioRuleTests {
    static let scenarios: [(name: String, scenario: Scenario)] = (try? Scenario.all()) ?? []

    @Test func scenariosLoad() throws {
        let all = try Scenario.all()
        #expect(all.count >= 40, "expected at least 40 scenarios, found \(all.count)")
        let document = "docs/concepts/attribution-rules.md"
        let rules = try String(contentsOf: ScenarioFiles.repositoryRoot.appendingPathComponent(document), encoding: .utf8)
        for (name, scenario) in all {
            #expect(rules.contains("`\(scenario.rule)`"), "\(name): rule \(scenario.rule) is not in \(document)")
            #expect(rules.contains(name), "\(name) is not listed in \(document)")
            if let arrival = scenario.arrival {
                #expect(arrival.sorted() == Array(scenario.events.indices), "\(name): arrival must be a permutation of events")
            }
        }
    }

    @Test(arguments: scenarios.map(\.name))
    func scenario(_ name: String) throws {
        let scenario = try #require(Self.scenarios.first { $0.name == name }?.scenario)
        var runner = ScenarioRuleRunner(scenario)
        let run = runner.execute()
        for problem in ScenarioRuleRunner.differences(name: name, scenario: scenario, run: run) {
            Issue.record(Comment(rawValue: problem))
        }
    }

    /// A run repeats exactly with the same seed (delays and postback ids come from the seeded generator).
    @Test func runsRepeat() throws {
        for (name, scenario) in Self.scenarios.prefix(5) {
            var first = ScenarioRuleRunner(scenario)
            var second = ScenarioRuleRunner(scenario)
            #expect(first.execute().postbacks.map(\.held) == second.execute().postbacks.map(\.held), "\(name)")
        }
    }

    @Test func impressionIdentifiersSortLikeNames() {
        let names = ["a", "ab", "b", "click", "click-2", "view", "z9"]
        let ids = names.map(ScenarioRuleRunner.impressionIdentifier)
        #expect(ids == ids.sorted())
        #expect(Set(ids).count == names.count)
    }
}
