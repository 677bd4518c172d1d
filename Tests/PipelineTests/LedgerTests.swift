import AttributionModel
import ServiceRuntime
import Testing

@testable import attribution

/// The fault run's ledger must fail on every kind of loss or duplicate it claims to catch: a clean
/// small world passes, and each single breakage of it yields a violation.
@Suite("ledger")
struct LedgerTests {
    static let day: Milliseconds = 86_400_000
    static let network = AdNetworkIdentifier("example.adattributionkit")!

    static func order(_ id: String, window: Int = 0, didWin: Bool = true) -> PostbackOrder {
        PostbackOrder(
            payload: PostbackPayload(
                adNetworkIdentifier: network, sourceIdentifier: "12", advertisedItemIdentifier: 1_108_187_390,
                publisherItemIdentifier: nil, conversionType: .download, marketplaceIdentifier: nil, postbackIdentifier: id,
                postbackSequenceIndex: window, didWin: didWin),
            adInteractionType: .click, conversionValue: nil, coarseConversionValue: .low, countryCode: nil, isDevelopment: false)
    }

    /// One device: an impression that won, its conversion, an update in window 0, one postback delivered.
    static func world() -> (acknowledged: [Ledger.Acknowledged], records: Ledger.Records) {
        let acknowledged = [
            Ledger.Acknowledged(kind: "impressions", eventIdentifier: "e-impression", device: "device-7f3a"),
            Ledger.Acknowledged(kind: "conversions", eventIdentifier: "e-conversion", device: "device-7f3a"),
            Ledger.Acknowledged(kind: "conversion-value-updates", eventIdentifier: "e-update", device: "device-7f3a"),
        ]
        var records = Ledger.Records()
        records.reported = ["e-impression", "e-conversion", "e-update"]
        records.verified = ["e-impression": "impression-1", "e-conversion": "", "e-update": ""]
        records.attributions["e-conversion"] = Attribution(
            conversionIdentifier: "e-conversion", advertisedItemIdentifier: 1_108_187_390, conversionType: .download,
            conversionTime: 10 * day, countryCode: nil,
            winner: AttributedImpression(
                adNetworkIdentifier: network, impressionIdentifier: "impression-1", sourceIdentifier: 1234,
                publisherItemIdentifier: 5_838_492, interactionType: .click, kind: .adAttributionKit),
            nonWinners: [])
        records.routed["e-update"] = ("e-conversion", 10 * day + 1_000)
        records.due["p-1"] = order("p-1")
        records.delivered["p-1"] = 1
        return (acknowledged, records)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var violates: String?
        var breakage: @Sendable (inout Ledger.Records) -> Void
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "clean", violates: nil) { _ in },
        Case(name: "refused with a reason is accounted", violates: nil) {
            $0.attributions = [:]
            $0.routed = [:]
            $0.due = [:]
            $0.delivered = [:]
            $0.refused["e-conversion"] = "no-eligible-impression"
            $0.waiting = ["e-update"]
        },
        Case(name: "dead-lettered postback is accounted", violates: nil) {
            $0.delivered = [:]
            $0.deadDeliveries["p-1"] = "status 500"
        },
        Case(name: "acknowledged but never on events", violates: "unaccounted") { $0.reported.remove("e-impression") },
        // The verifier deletes a refused event from `events` as it refuses it: its refusal accounts for it.
        Case(name: "refused, and so no longer on events", violates: nil) {
            $0.attributions = [:]
            $0.routed = [:]
            $0.due = [:]
            $0.delivered = [:]
            $0.reported.remove("e-conversion")
            $0.refused["e-conversion"] = "unknown-advertised-app"
            $0.waiting = ["e-update"]
        },
        Case(name: "verified conversion with no outcome", violates: "unaccounted") {
            $0.attributions = [:]
            $0.due = [:]
            $0.delivered = [:]
        },
        Case(name: "update neither routed nor waiting", violates: "unaccounted") { $0.routed = [:] },
        Case(name: "postback neither delivered nor dead-lettered", violates: "neither delivered") { $0.delivered = [:] },
        Case(name: "postback delivered and dead-lettered", violates: "recorded twice") { $0.deadDeliveries["p-1"] = "x" },
        Case(name: "postback delivered under two lines", violates: "recorded twice") { $0.delivered["p-1"] = 2 },
        Case(name: "window prepared twice under two ids", violates: "first-window postbacks") {
            $0.due["p-2"] = order("p-2")
            $0.delivered["p-2"] = 1
        },
        Case(name: "delivered but never due", violates: "never fell due") { $0.delivered["p-x"] = 1 },
        Case(name: "device identifier in a postback", violates: "device identifiers") { $0.devicesInPostbacks = ["device-7f3a"] },
        Case(name: "still in flight", violates: "not idle") { $0.inFlight["postbacks (dispatcher) pending"] = 1 },
    ]

    @Test(arguments: cases)
    func breakage(_ test: Case) {
        let world = Self.world()
        var records = world.records
        test.breakage(&records)
        let report = Ledger(acknowledged: world.acknowledged, records: records, policy: TimePolicy(scale: 1)).account()
        if let violates = test.violates {
            #expect(report.violations.contains { $0.contains(violates) }, "\(report.violations)")
        } else {
            #expect(report.violations.isEmpty, "\(report.violations)")
        }
    }
}
