import AttributionModel
import Foundation
import Testing

@Suite("Conversion-value schemas: evaluation and decoding")
struct ConversionValueSchemaTests {
    /// Window 0: revenue tiers in USD, then a tutorial event, then 3 sessions; a locking rule for a
    /// purchase in EUR. Window 1: coarse tiers on sessions, decreases allowed.
    static let schema = ConversionValueSchema(windows: [
        .init(
            window: 0,
            rules: [
                .init(when: .init(revenue: ["EUR": 50]), fine: 63, coarse: .high, lock: true),
                .init(when: .init(revenue: ["USD": 20]), fine: 60, coarse: .high),
                .init(when: .init(revenue: ["USD": 5]), fine: 42, coarse: .high),
                .init(when: .init(events: ["tutorial": 1], revenue: ["USD": 1]), fine: 30, coarse: .medium),
                .init(when: .init(events: ["tutorial": 1]), fine: 10, coarse: .medium),
                .init(when: .init(sessions: 3), fine: 5, coarse: .low),
            ]),
        .init(
            window: 1,
            rules: [
                .init(when: .init(sessions: 10), fine: 20, coarse: .high),
                .init(when: .init(sessions: 2), fine: 10, coarse: .medium),
                .init(when: .init(), fine: 0, coarse: .low),
            ], allowDecrease: true),
    ])

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let window: Int
        let totals: ActivityTotals
        let previous: SchemaValue?
        let expected: SchemaValue?
        let changed: Bool
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "nothing yet", window: 0, totals: .init(sessions: 2), previous: nil, expected: nil, changed: false),
        Case(
            name: "3 sessions: the session rule", window: 0, totals: .init(sessions: 3), previous: nil,
            expected: .init(fine: 5, coarse: .low, lock: false), changed: true),
        Case(
            name: "the threshold itself counts (5 USD → 42)", window: 0, totals: .init(revenue: ["USD": 5]), previous: nil,
            expected: .init(fine: 42, coarse: .high, lock: false), changed: true),
        Case(
            name: "just below the threshold (4.99 USD) falls through", window: 0,
            totals: .init(events: ["tutorial": 1], revenue: ["USD": Decimal(string: "4.99")!]), previous: nil,
            expected: .init(fine: 30, coarse: .medium, lock: false), changed: true),
        Case(
            name: "currencies are not mixed: 30 EUR is not 20 USD", window: 0, totals: .init(revenue: ["EUR": 30]), previous: nil,
            expected: nil, changed: false),
        Case(
            name: "a locking rule locks", window: 0, totals: .init(revenue: ["EUR": 50]), previous: nil,
            expected: .init(fine: 63, coarse: .high, lock: true), changed: true),
        Case(
            name: "the same value again is no update", window: 0, totals: .init(sessions: 4),
            previous: .init(fine: 5, coarse: .low, lock: false), expected: .init(fine: 5, coarse: .low, lock: false),
            changed: false),
        Case(
            name: "never lower within the window", window: 0, totals: .init(sessions: 3),
            previous: .init(fine: 42, coarse: .high, lock: false), expected: .init(fine: 42, coarse: .high, lock: false),
            changed: false),
        Case(
            name: "a locked window never changes", window: 0, totals: .init(revenue: ["USD": 100]),
            previous: .init(fine: 10, coarse: .medium, lock: true), expected: .init(fine: 10, coarse: .medium, lock: true),
            changed: false),
        Case(
            name: "window 1 has its own rules", window: 1, totals: .init(sessions: 12), previous: nil,
            expected: .init(fine: 20, coarse: .high, lock: false), changed: true),
        Case(
            name: "window 1 allows decreases", window: 1, totals: .init(sessions: 2),
            previous: .init(fine: 20, coarse: .high, lock: false), expected: .init(fine: 10, coarse: .medium, lock: false),
            changed: true),
        Case(
            name: "an empty condition always holds", window: 1, totals: .init(), previous: nil,
            expected: .init(fine: 0, coarse: .low, lock: false), changed: true),
        Case(
            name: "a window without rules gives nothing", window: 2, totals: .init(sessions: 99), previous: nil, expected: nil,
            changed: false),
    ]

    @Test(arguments: cases)
    func evaluates(_ c: Case) {
        let evaluation = Self.schema.evaluate(window: c.window, totals: c.totals, previous: c.previous)
        #expect(evaluation.value == c.expected)
        #expect(evaluation.changed == c.changed)
    }

    @Test func totalsAddUp() {
        var totals = ActivityTotals()
        totals.add(Activity(sessions: 1, events: ["tutorial": 1], revenue: ["USD": Decimal(string: "2.50")!]))
        totals.add(Activity(sessions: 2, revenue: ["USD": Decimal(string: "2.50")!, "EUR": 1]))
        #expect(totals == ActivityTotals(sessions: 3, events: ["tutorial": 1], revenue: ["USD": 5, "EUR": 1]))
        #expect(Self.schema.evaluate(window: 0, totals: totals, previous: nil).value?.fine == 42)
    }

    @Test func decodesAValueBackIntoRanges() {
        // fine 42: revenue ≥ 5 USD, below 20 USD (the better single-metric rule); the EUR rule bounds EUR only.
        let d42 = Self.schema.decode(window: 0, fine: 42, coarse: nil)
        #expect(d42.ranges.count == 1)
        #expect(d42.ranges.first?.revenue["USD"] == DecodedConversionValue.Bounds<Decimal>(atLeast: 5, below: 20))
        // fine 10: the tutorial event; the better two-metric rule (tutorial and 1 USD) bounds nothing.
        let d10 = Self.schema.decode(window: 0, fine: 10, coarse: nil)
        #expect(d10.ranges.first?.events["tutorial"] == DecodedConversionValue.Bounds<Int>(atLeast: 1, below: nil))
        // coarse high in window 1: ≥ 10 sessions; coarse medium: 2 to 10 sessions.
        #expect(
            Self.schema.decode(window: 1, fine: nil, coarse: .medium).ranges.first?.sessions
                == DecodedConversionValue.Bounds<Int>(atLeast: 2, below: 10))
        // coarse high in window 0 stands for three rules.
        #expect(Self.schema.decode(window: 0, fine: nil, coarse: .high).ranges.count == 3)
        #expect(Self.schema.decode(window: 0, fine: 7, coarse: nil).ranges.isEmpty)
    }

    @Test func validationNamesEveryProblem() {
        #expect(Self.schema.validationProblems().isEmpty)
        let bad = ConversionValueSchema(windows: [
            .init(window: 3, rules: [.init(when: .init(sessions: -1, revenue: ["usd": -1]), fine: 64, coarse: .low)]),
            .init(window: 3, rules: []),
        ])
        let problems = bad.validationProblems()
        for fragment in [
            "window must be 0, 1 or 2", "listed twice", "1–64 rules", "fine must be within 0–63", "sessions must be ≥ 0",
            "usd is not an ISO 4217 code", "revenue.usd must be ≥ 0",
        ] {
            #expect(problems.contains { $0.contains(fragment) }, "\(fragment) in \(problems)")
        }
        #expect(Activity(sessions: 1).validationProblems().isEmpty)
        #expect(!Activity().validationProblems().isEmpty)
        #expect(!Activity(revenue: ["US": 1]).validationProblems().isEmpty)
    }
}
