import AttributionModel
import Testing

@Suite("Winner selection")
struct WinnerSelectionTests {
    typealias F = Fixture
    let app = AdvertisedAppConfiguration(itemIdentifier: Fixture.app)
    let conversion: Milliseconds = 40 * Fixture.day

    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let pool: [VerifiedImpression]
        let winner: String?
        let nonWinners: [String]
        var testDescription: String { name }
    }

    static let t: Milliseconds = 40 * Fixture.day
    static let cases: [Case] = [
        Case(name: "no impressions: organic", pool: [], winner: nil, nonWinners: []),
        Case(
            name: "click beats a more recent view",
            pool: [
                F.impression("click", at: t - 5 * F.hour), F.impression("view", network: "two.net", type: .view, at: t - F.hour),
            ],
            winner: "click", nonWinners: ["view"]),
        Case(
            name: "most recent click wins",
            pool: [F.impression("old", at: t - 10 * F.hour), F.impression("new", network: "two.net", at: t - F.hour)],
            winner: "new", nonWinners: ["old"]),
        Case(
            name: "production beats development",
            pool: [
                F.impression("dev", at: t - F.hour, publisher: 0),
                F.impression("prod", network: "two.net", type: .view, at: t - 2 * F.hour),
            ],
            winner: "prod", nonWinners: ["dev"]),
        Case(
            name: "view older than 1 day is outside its window",
            pool: [F.impression("view", type: .view, at: t - F.day - 1)], winner: nil, nonWinners: []),
        Case(
            name: "view exactly 1 day old is inside its window",
            pool: [F.impression("view", type: .view, at: t - F.day)], winner: "view", nonWinners: []),
        Case(
            name: "click exactly 30 days old is inside, one ms more is outside",
            pool: [F.impression("edge", at: t - 30 * F.day), F.impression("out", network: "two.net", at: t - 30 * F.day - 1)],
            winner: "edge", nonWinners: []),
        Case(
            name: "impression after the conversion does not count",
            pool: [F.impression("late", at: t + 1)], winner: nil, nonWinners: []),
        Case(
            name: "one non-winner per other network, winner's network excluded",
            pool: [
                F.impression("a1", network: "a.net", at: t - 1 * F.hour),
                F.impression("a2", network: "a.net", at: t - 2 * F.hour),
                F.impression("b1", network: "b.net", at: t - 3 * F.hour),
                F.impression("b2", network: "b.net", at: t - 4 * F.hour),
            ],
            winner: "a1", nonWinners: ["b1"]),
        Case(
            name: "at most 6 impressions considered (most recent) and at most 5 non-winners",
            pool: (1...8).map { F.impression("n\($0)", network: "net\($0).x", at: t - Milliseconds($0) * F.hour) },
            winner: "n1", nonWinners: ["n2", "n3", "n4", "n5", "n6"]),
        Case(
            name: "equal time and type: impression id breaks the tie",
            pool: [F.impression("b", network: "b.net", at: t - F.hour), F.impression("a", network: "a.net", at: t - F.hour)],
            winner: "a", nonWinners: ["b"]),
        Case(
            name: "other advertised app's impressions are not in the pool",
            pool: [F.impression("other", at: t - F.hour, app: 42)], winner: nil, nonWinners: []),
    ]

    @Test(arguments: cases)
    func selects(_ c: Case) {
        let result = WinnerSelection.select(
            from: c.pool, conversionType: .download, time: conversion, app: app, policy: .realTime)
        #expect(result?.winner.payload.impressionIdentifier == c.winner)
        #expect((result?.nonWinners ?? []).map(\.payload.impressionIdentifier) == c.nonWinners)
    }

    struct WindowCase: Sendable {
        let configuration: AttributionWindowsConfiguration?
        let network: String
        let type: InteractionType
        let days: Int?
    }

    static let windowCases: [WindowCase] = [
        WindowCase(configuration: nil, network: "a.net", type: .click, days: 30),
        WindowCase(configuration: nil, network: "a.net", type: .view, days: 1),
        WindowCase(configuration: .init(global: .init(click: 7, view: 3)), network: "a.net", type: .click, days: 7),
        WindowCase(configuration: .init(global: .init(click: 7, view: 3)), network: "a.net", type: .view, days: 3),
        WindowCase(
            configuration: .init(global: .init(click: 7), networks: [Fixture.network("a.net"): .init(click: 2)]),
            network: "a.net", type: .click, days: 2),
        WindowCase(
            configuration: .init(global: .init(click: 7), networks: [Fixture.network("a.net"): .init(click: 2)]),
            network: "b.net", type: .click, days: 7),
        WindowCase(
            configuration: .init(networks: [Fixture.network("a.net"): .init(ignoreInteractionType: .view)]),
            network: "a.net", type: .view, days: nil),
        WindowCase(
            configuration: .init(networks: [Fixture.network("a.net"): .init(ignoreInteractionType: .view)]),
            network: "a.net", type: .click, days: 30),
        // ignoreInteractionType is not honoured in `global`.
        WindowCase(configuration: .init(global: .init(ignoreInteractionType: .view)), network: "a.net", type: .view, days: 1),
    ]

    @Test("window precedence: network > global > default", arguments: windowCases)
    func windowPrecedence(_ c: WindowCase) {
        let window = WinnerSelection.window(for: Fixture.network(c.network), type: c.type, configuration: c.configuration)
        #expect(window == c.days.map { .days(Int64($0)) })
    }

    @Test func reengagementTakesOnlyEligibleClicksAndNoNonWinners() {
        let pool = [
            F.impression("eligible", at: conversion - 2 * F.hour, reengagement: true),
            F.impression("not-eligible", network: "b.net", at: conversion - F.hour),
            F.impression("view", network: "c.net", type: .view, at: conversion - F.hour, reengagement: true),
        ]
        let result = WinnerSelection.select(
            from: pool, conversionType: .reengagement, time: conversion, app: app, policy: .realTime)
        #expect(result?.winner.payload.impressionIdentifier == "eligible")
        #expect(result?.nonWinners.isEmpty == true)
    }

    @Test func timeScaleShrinksWindows() {
        let policy = TimePolicy(scale: 86_400)  // a day lasts a second
        let pool = [
            F.impression("click", at: conversion - 30_000), F.impression("late", network: "b.net", at: conversion - 30_001),
        ]
        let result = WinnerSelection.select(from: pool, conversionType: .download, time: conversion, app: app, policy: policy)
        #expect(result?.winner.payload.impressionIdentifier == "click")
        #expect(result?.nonWinners.isEmpty == true)
    }
}
