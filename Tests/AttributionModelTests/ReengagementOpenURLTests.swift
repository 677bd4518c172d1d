import AttributionModel
import Foundation
import Testing

/// The URL a re-engagement opens (`ReengagementOpenURL`): Apple's parameter appended to the ad's link,
/// the link's own parameters and fragment as sent; and the outcome record attribution-winner keeps.
@Suite struct ReengagementOpenURLTests {
    static let tag = "5b0f6c9e-1f1a-4c61-9d7e-2a4c1e7b3d11"

    static func opened(_ url: String) throws -> String {
        ReengagementOpenURL.opening(try ReengagementOpenURL.validate(url), tag: tag)
    }

    @Test(arguments: [
        ("https://app.example.com/offer", "https://app.example.com/offer?AdAttributionKitReengagementOpen=\(tag)"),
        ("https://app.example.com", "https://app.example.com?AdAttributionKitReengagementOpen=\(tag)"),
        (
            "https://app.example.com/offer?campaign=spring%20sale&x=1&empty=&flag",
            "https://app.example.com/offer?campaign=spring%20sale&x=1&empty=&flag&AdAttributionKitReengagementOpen=\(tag)"
        ),
        (
            "https://app.example.com/offer?AdAttributionKitReengagementOpen=stale&ref=ad#top",
            "https://app.example.com/offer?ref=ad&AdAttributionKitReengagementOpen=\(tag)#top"
        ),
        (
            "https://App.Example.com:8443/a/b?q=%2F",
            "https://App.Example.com:8443/a/b?q=%2F&AdAttributionKitReengagementOpen=\(tag)"
        ),
    ])
    func theParameterIsAppendedAndTheRestStaysAsSent(url: String, expected: String) throws {
        #expect(try Self.opened(url) == expected)
    }

    /// A tag is ingest's event id (a UUID, or an id derived from an `Idempotency-Key`): whatever it is, it
    /// cannot end the parameter or start another.
    @Test func aTagIsEncodedAsAQueryValue() throws {
        let url = ReengagementOpenURL.opening(try ReengagementOpenURL.validate("https://a.example/"), tag: "a&b=c+d#e")
        #expect(url == "https://a.example/?AdAttributionKitReengagementOpen=a%26b%3Dc%2Bd%23e")
        let parsed = URLComponents(string: url)?.queryItems?.first { $0.name == ReengagementOpenURL.parameter }?.value
        #expect(parsed == "a&b=c+d#e")
    }

    @Test(arguments: [
        ConversionOutcome.created, .notCreated(.noEligibleImpression), .notCreated(.cooldown), .notCreated(.appReengagementCap),
        .notCreated(.deviceReengagementCap),
    ])
    func anOutcomeReadsBackAsRecorded(outcome: ConversionOutcome) {
        #expect(ConversionOutcome(recorded: outcome.recorded) == outcome)
    }

    @Test func theAnswerSaysWhetherAndWhy() {
        #expect(ConversionOutcome.created.conversion == "created")
        #expect(ConversionOutcome.created.reason == nil)
        #expect(ConversionOutcome.notCreated(.appReengagementCap).conversion == "not-created")
        #expect(ConversionOutcome.notCreated(.appReengagementCap).reason == "re-engagement-app-cap")
        #expect(ConversionOutcome(recorded: "not-created") == nil)
        #expect(ConversionOutcome(recorded: "not-created unknown") == nil)
    }
}
