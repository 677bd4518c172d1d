import AttributionModel
import Foundation
import Testing

@Suite("Test postbacks: the postbacks a request makes, and the requests refused")
struct TestPostbacksTests {
    static let network = AdNetworkIdentifier("tester.adattributionkit")!

    static func request(_ tier: Int, windows: Int = 3, didWin: Bool = true, publisher: ItemIdentifier = 5_838_492)
        -> TestPostbackRequest
    {
        TestPostbackRequest(
            adNetworkIdentifier: network, tier: tier, windows: windows, conversionValue: 42, coarseConversionValue: .high,
            countryCode: "DE", didWin: didWin, advertisedItemIdentifier: 1_300_000_001, publisherItemIdentifier: publisher,
            sourceIdentifier: 1234, postbackIdentifiers: ["a", "b", "c"])
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var request: TestPostbackRequest
        /// Per postback: window, source id, fine, coarse, publisher, country, marketplace.
        var made: [String]
        var testDescription: String { "tier \(request.tier), \(request.windows) windows, did-win \(request.didWin)" }
    }

    static let rows: [Row] = [
        Row(request: request(0), made: ["0 34 - - - - -"]),
        Row(request: request(1), made: ["0 34 - high - - store", "1 34 - high - - store", "2 34 - high - - store"]),
        Row(request: request(2), made: ["0 1234 42 - - - store", "1 34 - high - - store", "2 34 - high - - store"]),
        Row(request: request(3), made: ["0 1234 42 - 5838492 DE store", "1 34 - high - - store", "2 34 - high - - store"]),
        Row(request: request(3, windows: 1), made: ["0 1234 42 - 5838492 DE store"]),
        Row(request: request(3, didWin: false), made: ["0 34 - high - - store"]),
        Row(request: request(0, didWin: false), made: ["0 34 - - - - -"]),
        // Publisher 0 (a development impression's) keeps the tier asked for, not developer mode's highest.
        Row(request: request(1, windows: 1, publisher: 0), made: ["0 34 - high - - store"]),
    ]

    @Test("each tier's fields, by the postbacks' own gating", arguments: rows)
    func testPostbacksMade(_ row: Row) {
        let orders = TestPostbacks.orders(row.request)
        let described = orders.map { order in
            let payload = order.payload
            return [
                String(payload.postbackSequenceIndex), payload.sourceIdentifier, order.conversionValue.map(String.init) ?? "-",
                order.coarseConversionValue?.rawValue ?? "-", payload.publisherItemIdentifier.map(String.init) ?? "-",
                order.countryCode ?? "-", payload.marketplaceIdentifier == nil ? "-" : "store",
            ].joined(separator: " ")
        }
        #expect(described == row.made)
        // Signed with the test key, never a development or production one.
        #expect(orders.allSatisfy { $0.signingRole == .testPostback && $0.payload.didWin == row.request.didWin })
        #expect(orders.map(\.payload.postbackIdentifier) == Array(["a", "b", "c"].prefix(orders.count)))
        #expect(TestPostbacks.count(row.request) == row.made.count)
    }

    @Test(
        "refused before anything is written",
        arguments: [
            (#"{"tier": 4, "advertised-item-identifier": 1}"#, "value-out-of-range"),
            (#"{"tier": -1, "advertised-item-identifier": 1}"#, "value-out-of-range"),
            (#"{"tier": 1, "windows": 2, "advertised-item-identifier": 1}"#, "value-out-of-range"),
            (#"{"tier": 1, "conversion-value": 64, "advertised-item-identifier": 1}"#, "value-out-of-range"),
            (#"{"tier": 1, "source-identifier": 10000, "advertised-item-identifier": 1}"#, "value-out-of-range"),
            (#"{"tier": 1, "source-identifier-digits": 3, "advertised-item-identifier": 1}"#, "value-out-of-range"),
            (#"{"tier": 2, "source-identifier-digits": 5, "advertised-item-identifier": 1}"#, "value-out-of-range"),
            (#"{"tier": 1, "advertised-item-identifier": 0}"#, "invalid-item-identifier"),
            (#"{"tier": 1, "country-code": "de", "advertised-item-identifier": 1}"#, "invalid-country-code"),
            (
                #"{"tier": 1, "conversion-tag": "0f8fad5b-d9cb-469f-a165-70867728950e", "advertised-item-identifier": 1}"#,
                "conversion-tag-not-supported"
            ),
            (
                #"{"tier": 1, "conversion-type": "re-engagement", "conversion-tag": "0F8FAD5B-D9CB-469F-A165-70867728950E", "advertised-item-identifier": 1}"#,
                "invalid-conversion-tag"
            ),
        ])
    func refused(_ body: String, _ reason: String) throws {
        let request = try JSONDecoder().decode(TestPostbackRequest.self, from: Data(body.utf8))
        #expect(throws: RequestProblem.self) { try request.validate() }
        do { try request.validate() } catch { #expect(error.reason.rawValue == reason, "\(error)") }
    }

    @Test("defaults: a click, a download, the first window, a winner, source 1234, publisher 0")
    func defaults() throws {
        let request = try JSONDecoder().decode(
            TestPostbackRequest.self, from: Data(#"{"tier": 3, "advertised-item-identifier": 7}"#.utf8))
        try request.validate()
        #expect(request.adInteractionType == .click && request.conversionType == .download && request.windows == 1)
        #expect(request.didWin && request.sourceIdentifier == 1234 && request.publisherItemIdentifier == 0)
        var named = request
        named.postbackIdentifiers = ["x"]
        let order = try #require(TestPostbacks.orders(named).first)
        #expect(order.payload.sourceIdentifier == "1234" && order.payload.publisherItemIdentifier == 0)
        let reengagement = try JSONDecoder().decode(
            TestPostbackRequest.self,
            from: Data(
                #"{"tier": 1, "conversion-type": "re-engagement", "conversion-tag": "0f8fad5b-d9cb-469f-a165-70867728950e", "advertised-item-identifier": 7}"#
                    .utf8))
        try reengagement.validate()
    }
}
