import AttributionCrypto
import AttributionModel
import Foundation
import Testing

/// Builders for the SKAdNetwork suites: one complete postback per version, and the error a body throws.
enum SKANFixture {
    static let network = "example123.skadnetwork"
    static let app: ItemIdentifier = 525_463_029
    static let sourceApp: ItemIdentifier = 1_234_567_891
    static let transaction = "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28"

    /// A winning postback of `version` with every field that version signs (source-app-id included).
    static func postback(_ version: SKANPostbackVersion) -> SKANPostback {
        switch version {
        case .v1:
            return SKANPostback(
                version: .v1, adNetworkIdentifier: network, campaignIdentifier: 42, appIdentifier: app,
                transactionIdentifier: transaction)
        case .v2, .v21:
            return SKANPostback(
                version: version, adNetworkIdentifier: network, campaignIdentifier: 42, appIdentifier: app,
                transactionIdentifier: transaction, redownload: true, sourceAppIdentifier: sourceApp, conversionValue: 20)
        case .v22:
            return SKANPostback(
                version: version, adNetworkIdentifier: network, campaignIdentifier: 42, appIdentifier: app,
                transactionIdentifier: transaction, redownload: true, sourceAppIdentifier: sourceApp, fidelityType: 1,
                conversionValue: 20)
        case .v3:
            return SKANPostback(
                version: version, adNetworkIdentifier: network, campaignIdentifier: 42, appIdentifier: app,
                transactionIdentifier: transaction, redownload: true, sourceAppIdentifier: sourceApp, fidelityType: 1,
                didWin: true, conversionValue: 20)
        case .v4:
            return SKANPostback(
                version: version, adNetworkIdentifier: network, sourceIdentifier: "5239", appIdentifier: app,
                transactionIdentifier: transaction, redownload: false, sourceAppIdentifier: sourceApp, fidelityType: 1,
                didWin: true, postbackSequenceIndex: 0, conversionValue: 63, countryCode: "US")
        }
    }

    /// The error `body` throws as a JWSError; nil (and a recorded issue) for anything else.
    static func error(_ body: () throws -> Void) -> JWSError? {
        do {
            try body()
            return nil
        } catch let error as JWSError {
            return error
        } catch {
            Issue.record("expected a JWSError, got \(error)")
            return nil
        }
    }

    /// The JSON body as sent, with `edit` applied to its object (to remove or retype a key).
    static func body(_ postback: SKANPostback, edit: (inout [String: Any]) -> Void = { _ in }) throws -> Data {
        var object = try #require(JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(postback)) as? [String: Any])
        edit(&object)
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }
}

/// Apple's own example postbacks, each stated by Apple to carry a valid signature by its published
/// P-256 key: "Verifying an install-validation postback" (4.0), "Combining parameters for SKAdNetwork 3
/// postbacks" (3.0) and "Combining parameters for previous SKAdNetwork postback versions" (2.2).
enum SKANAppleExample: String, CaseIterable, CustomTestStringConvertible {
    case webAdHighTier = """
        {"version": "4.0", "ad-network-id": "com.example", "source-identifier": "5239", "app-id": 525463029,
         "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e30", "redownload": false, "source-domain": "example.com",
         "fidelity-type": 1, "did-win": true, "conversion-value": 63, "postback-sequence-index": 0,
         "attribution-signature": "MEUCIGRmSMrqedNu6uaHyhVcifs118R5z/AB6cvRaKrRRHWRAiEAv96ne3dKQ5kJpbsfk4eYiePmrZUU6sQmo+7zfP/1Bxo="}
        """
    case webAdLowTier = """
        {"version": "4.0", "ad-network-id": "com.example", "source-identifier": "39", "app-id": 525463029,
         "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e31", "redownload": false, "source-domain": "example.com",
         "fidelity-type": 1, "did-win": true, "coarse-conversion-value": "high", "postback-sequence-index": 0,
         "attribution-signature": "MEUCIQD4rX6eh38qEhuUKHdap345UbmlzA7KEZ1bhWZuYM8MJwIgMnyiiZe6heabDkGwOaKBYrUXQhKtF3P/ERHqkR/XpuA="}
        """
    case version3Winning = """
        {"version": "3.0", "ad-network-id": "example123.skadnetwork", "campaign-id": 42,
         "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28", "app-id": 525463029,
         "attribution-signature": "MEYCIQD5eq3AUlamORiGovqFiHWI4RZT/PrM3VEiXUrsC+M51wIhAPMANZA9c07raZJ64gVaXhB9+9yZj/X6DcNxONdccQij",
         "redownload": true, "source-app-id": 1234567891, "fidelity-type": 1, "conversion-value": 20, "did-win": true}
        """
    case version3NonWinning = """
        {"version": "3.0", "ad-network-id": "example123.skadnetwork", "campaign-id": 42,
         "transaction-id": "f9ac267a-a889-44ce-b5f7-0166d11461f0", "app-id": 525463029,
         "attribution-signature": "MEUCIQDDetUtkyc/MiQvVJ5I6HIO1E7l598572Wljot2Onzd4wIgVJLzVcyAV+TXksGNoa0DTMXEPgNPeHCmD4fw1ABXX0g=",
         "redownload": true, "fidelity-type": 1, "did-win": false}
        """
    case version22 = """
        {"version": "2.2", "ad-network-id": "com.example", "campaign-id": 42,
         "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28", "app-id": 525463029,
         "attribution-signature": "MEYCIQDTuQ1Z4Tpy9D3aEKbxLl5J5iKiTumcqZikuY/AOD2U7QIhAJAaiAv89AoquHXJffcieEQXdWHpcV8ZgbKN0EwV9/sY",
         "redownload": true, "source-app-id": 1234567891, "fidelity-type": 1, "conversion-value": 20}
        """

    var body: Data { Data(rawValue.utf8) }
    var testDescription: String { "\(self)" }
}

/// Apple's own AdAttributionKit example postback, "Identifying the parameters in a postback": made in
/// developer settings, so signed with `apple-development-identifier/1`, a header that escapes `/` as
/// `\/`, an upper-case postback identifier and an advertised item identifier above 2³².
enum AAKAppleExample {
    static let body = Data(
        """
        {"jws-string": "eyJraWQiOiJhcHBsZS1kZXZlbG9wbWVudC1pZGVudGlmaWVyXC8xIiwiYWxnIjoiRVMyNTYifQ.eyJwb3N0YmFjay1pZGVudGlmaWVyIjoiODU1NDZFQjctRkQzOS00NEJDLTg5OTAtQzk4QTRBQzM2QTQ5IiwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6MCwibWFya2V0cGxhY2UtaWRlbnRpZmllciI6ImNvbS5hcHBsZS5BcHBTdG9yZSIsImltcHJlc3Npb24tdHlwZSI6ImFwcC1pbXByZXNzaW9uIiwiYWQtbmV0d29yay1pZGVudGlmaWVyIjoiZGV2ZWxvcG1lbnQuYWRhdHRyaWJ1dGlvbmtpdCIsImRpZC13aW4iOnRydWUsInBvc3RiYWNrLXNlcXVlbmNlLWluZGV4IjowLCJjb252ZXJzaW9uLXR5cGUiOiJyZS1lbmdhZ2VtZW50Iiwic291cmNlLWlkZW50aWZpZXIiOiIxMjM0IiwiYWR2ZXJ0aXNlZC1pdGVtLWlkZW50aWZpZXIiOjEwNzM4MDI3NzU2fQ.bAdNwKd6OfHK9tofvjjua4X_JPcFTxXPQSspD9gZkinw97pY7R1aI-LSjl-oxZZF3_K2H5JK5TSEBee4_1U4oQ",
         "conversion-value": 24, "ad-interaction-type": "click", "country-code": "US"}
        """.utf8)
    static let keyID = "apple-development-identifier/1"
    static let advertisedItemIdentifier: ItemIdentifier = 10_738_027_756
}
