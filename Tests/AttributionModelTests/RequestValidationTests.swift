import AttributionModel
import Foundation
import Testing

/// Ingest's request checks, run where they live: beside the request types. Each case is a body as a
/// client sends it and the reason it is refused with (nil: accepted). Where several things are wrong,
/// the first check in the written order wins, as ingest answers it.
@Suite("Request validation")
struct RequestValidationTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let expected: ProblemReason?
        let check: @Sendable () throws -> Void

        var testDescription: String { name }
    }

    static let now: Milliseconds = 1_719_599_957_239
    static let allowList = DestinationPolicy(allowedHosts: ["receiver:8080"])

    static func decoded<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(json.utf8))
    }

    // MARK: Event bodies

    static func click(_ extra: String = "") -> String {
        #"{"type":"click","time":\#(now),"loaded-at":\#(now)\#(extra)}"#
    }
    static func impression(
        device: String = "device-1", jws: String? = "a.b.c", skan: String? = nil, interaction: String = click()
    )
        -> String
    {
        var fields = [#""device-identifier":"\#(device)""#, #""interaction":\#(interaction)"#]
        if let jws { fields.append(#""impression":"\#(jws)""#) }
        if let skan { fields.append(#""skadnetwork-impression":\#(skan)"#) }
        return "{" + fields.joined(separator: ",") + "}"
    }
    static func skan(version: String = "4.0", fidelity: Int = 1) -> String {
        #"{"version":"\#(version)","ad-network-id":"example123.skadnetwork","source-identifier":5239,"#
            + #""itunes-item-id":1108187390,"nonce":"68483ef6-0678-4fa6-9a13-1b3cd4a8f2d4","source-app-id":5838492,"#
            + #""fidelity-type":\#(fidelity),"timestamp":\#(now),"signature":"MEUCIQ"}"#
    }
    static func impressionCase(_ name: String, _ body: String, _ expected: ProblemReason?) -> Case {
        Case(name: "impression: \(name)", expected: expected) {
            _ = try decoded(IngestRequests.Impression.self, body).report(receivedAt: now)
        }
    }

    static let impressions: [Case] = [
        impressionCase("JWS click", impression(), nil),
        impressionCase(
            "JWS view", impression(interaction: #"{"type":"view","time":\#(now),"begin":\#(now - 3_000)}"#), nil),
        impressionCase("SKAdNetwork click", impression(jws: nil, skan: skan()), nil),
        impressionCase("device id of 128 bytes", impression(device: String(repeating: "d", count: 128)), nil),
        impressionCase("empty device id", impression(device: ""), .invalidDeviceIdentifier),
        impressionCase(
            "device id of 129 bytes", impression(device: String(repeating: "d", count: 129)), .invalidDeviceIdentifier),
        impressionCase("empty device id and no impression", impression(device: "", jws: nil), .invalidDeviceIdentifier),
        impressionCase(
            "click without loaded-at", impression(interaction: #"{"type":"click","time":\#(now)}"#), .invalidInteraction),
        // A view recorded in one call (Apple's handleView(), AdAttributionKit only) has no begin.
        impressionCase("JWS one-call view", impression(interaction: #"{"type":"view","time":\#(now)}"#), nil),
        impressionCase(
            "SKAdNetwork view without begin",
            impression(jws: nil, skan: skan(fidelity: 0), interaction: #"{"type":"view","time":\#(now)}"#),
            .invalidInteraction),
        impressionCase(
            "SKAdNetwork view",
            impression(
                jws: nil, skan: skan(fidelity: 0), interaction: #"{"type":"view","time":\#(now),"begin":\#(now - 3_000)}"#),
            nil),
        impressionCase("one-call view at time 0", impression(interaction: #"{"type":"view","time":0}"#), .invalidTime),
        impressionCase(
            "click tapped before it was loaded",
            impression(interaction: #"{"type":"click","time":\#(now),"loaded-at":\#(now + 1)}"#), .invalidInteraction),
        impressionCase(
            "click tapped as it was loaded", impression(interaction: #"{"type":"click","time":\#(now),"loaded-at":\#(now)}"#),
            nil),
        impressionCase(
            "view ending before it began", impression(interaction: #"{"type":"view","time":\#(now),"begin":\#(now + 1)}"#),
            .invalidInteraction),
        impressionCase("JWS of two parts", impression(jws: "a.b"), .invalidComponents),
        impressionCase("empty JWS", impression(jws: ""), .invalidComponents),
        impressionCase("JWS over 8 KiB", impression(jws: String(repeating: "a", count: 8_190) + ".b.c"), .invalidComponents),
        impressionCase("neither impression", impression(jws: nil), .invalidComponents),
        impressionCase("both impressions", impression(skan: skan()), .invalidComponents),
        impressionCase("SKAdNetwork 3.0", impression(jws: nil, skan: skan(version: "3.0")), .invalidSKAdNetworkImpression),
        impressionCase(
            "SKAdNetwork view-through reported as a click", impression(jws: nil, skan: skan(fidelity: 0)), .invalidInteraction),
        impressionCase("time 0", impression(interaction: #"{"type":"click","time":0,"loaded-at":\#(now)}"#), .invalidTime),
        impressionCase(
            "loaded-at in 2101", impression(interaction: #"{"type":"click","time":\#(now),"loaded-at":4133980800000}"#),
            .invalidTime),
    ]

    static func conversion(device: String = "device-1", country: String? = "US", time: Milliseconds = now) -> String {
        #"{"device-identifier":"\#(device)","advertised-item-identifier":1108187390,"conversion-type":"download","#
            + #""time":\#(time)\#(country.map { #","country-code":"\#($0)""# } ?? "")}"#
    }
    static func conversionCase(_ name: String, _ body: String, _ expected: ProblemReason?) -> Case {
        Case(name: "conversion: \(name)", expected: expected) {
            _ = try decoded(IngestRequests.Conversion.self, body).report(receivedAt: now, conversionTag: "tag")
        }
    }

    static let conversions: [Case] = [
        conversionCase("with a country", conversion(), nil),
        conversionCase("without a country", conversion(country: nil), nil),
        conversionCase("empty device id", conversion(device: ""), .invalidDeviceIdentifier),
        conversionCase("lower-case country", conversion(country: "us"), .invalidCountryCode),
        conversionCase("three-letter country", conversion(country: "USA"), .invalidCountryCode),
        // ISO 3166-1 alpha-2 as assigned: two upper-case letters are not enough.
        conversionCase("unassigned country ZZ", conversion(country: "ZZ"), .invalidCountryCode),
        conversionCase("country Åland AX", conversion(country: "AX"), nil),
        conversionCase("country Kosovo XK", conversion(country: "XK"), nil),
        conversionCase("time in 1999", conversion(time: 946_684_799_999), .invalidTime),
        conversionCase("bad country and time", conversion(country: "U", time: 0), .invalidCountryCode),
        conversionCase("an alternative marketplace", Self.marketplace("com.example.market-place"), nil),
        conversionCase("the App Store named", Self.marketplace("com.apple.AppStore"), nil),
        conversionCase("a marketplace of one label", Self.marketplace("marketplace"), .invalidMarketplaceIdentifier),
        conversionCase("an empty label", Self.marketplace("com..example"), .invalidMarketplaceIdentifier),
        conversionCase("a space", Self.marketplace("com.example store"), .invalidMarketplaceIdentifier),
        conversionCase("a URL", Self.marketplace("https://store.example"), .invalidMarketplaceIdentifier),
        conversionCase("non-ASCII", Self.marketplace("com.exämple"), .invalidMarketplaceIdentifier),
        conversionCase(
            "256 characters", Self.marketplace("com." + String(repeating: "a", count: 252)), .invalidMarketplaceIdentifier),
        conversionCase("a re-engagement URL", Self.reengagement(url: "https://app.example.com/offer?x=1"), nil),
        conversionCase(
            "a URL on an install", Self.reengagement(url: "https://app.example.com/", type: "download"), .invalidReengagementURL),
        conversionCase("an http URL", Self.reengagement(url: "http://app.example.com/"), .invalidReengagementURL),
        conversionCase("a custom scheme", Self.reengagement(url: "myapp://offer"), .invalidReengagementURL),
        conversionCase("a relative URL", Self.reengagement(url: "/offer"), .invalidReengagementURL),
        conversionCase("no host", Self.reengagement(url: "https:///offer"), .invalidReengagementURL),
        conversionCase("a space", Self.reengagement(url: "https://app.example.com/a b"), .invalidReengagementURL),
        conversionCase("non-ASCII", Self.reengagement(url: "https://app.example.com/é"), .invalidReengagementURL),
        conversionCase(
            "2,049 bytes", Self.reengagement(url: "https://app.example.com/" + String(repeating: "a", count: 2_025)),
            .invalidReengagementURL),
        conversionCase(
            "2,048 bytes", Self.reengagement(url: "https://app.example.com/" + String(repeating: "a", count: 2_024)), nil),
    ]

    static func reengagement(url: String, type: String = "re-engagement") -> String {
        #"{"device-identifier":"device-1","advertised-item-identifier":1108187390,"conversion-type":"\#(type)","#
            + #""time":\#(now),"reengagement-url":"\#(url)"}"#
    }

    static func marketplace(_ identifier: String) -> String {
        String(conversion().dropLast()) + #","marketplace-identifier":"\#(identifier)"}"#
    }

    static func update(fine: Int, time: Milliseconds = now) -> String {
        #"{"device-identifier":"device-1","advertised-item-identifier":1108187390,"time":\#(time),"#
            + #""fineConversionValue":\#(fine)}"#
    }
    static func updateCase(_ name: String, _ body: String, _ expected: ProblemReason?) -> Case {
        Case(name: "update: \(name)", expected: expected) {
            _ = try decoded(IngestRequests.ValueUpdate.self, body).report(receivedAt: now)
        }
    }

    static let updates: [Case] = [
        updateCase("fine 0", update(fine: 0), nil),
        updateCase("fine 63", update(fine: 63), nil),
        updateCase("fine 64", update(fine: 64), .valueOutOfRange),
        updateCase("fine -1", update(fine: -1), .valueOutOfRange),
        updateCase("time 0", update(fine: 1, time: 0), .invalidTime),
        // Apple's AdAttributionKitError.invalidConversionTag and .conversionTagNotSupported.
        updateCase("a conversion tag", tagged(#""conversionTag":"\#(tag)""#), nil),
        updateCase("the tag as the 202 spells it", tagged(#""conversion-tag":"\#(tag)""#), nil),
        updateCase("a tag that is no tag", tagged(#""conversionTag":"abc""#), .invalidConversionTag),
        updateCase("a tag in upper case", tagged(#""conversionTag":"\#(tag.uppercased())""#), .invalidConversionTag),
        updateCase(
            "a tag for re-engagements", tagged(#""conversionTag":"\#(tag)","conversionTypes":["reengagement"]"#), nil),
        updateCase(
            "a tag for installs only", tagged(#""conversionTag":"\#(tag)","conversionTypes":["install"]"#),
            .conversionTagNotSupported),
    ]

    static let tag = "6f1c2a4e-8b3d-4f5a-9c7e-1d2b3a4c5e6f"
    static func tagged(_ fields: String) -> String { String(update(fine: 1).dropLast()) + "," + fields + "}" }

    static func activity(_ fields: String, device: String = "device-1") -> String {
        #"{"device-identifier":"\#(device)","advertised-item-identifier":1108187390,"time":\#(now)\#(fields)}"#
    }
    static func activityCase(_ name: String, _ body: String, _ expected: ProblemReason?) -> Case {
        Case(name: "activity: \(name)", expected: expected) {
            _ = try decoded(IngestRequests.ActivityReportRequest.self, body).report(receivedAt: now)
        }
    }
    static func evaluationCase(_ name: String, _ body: String, _ expected: ProblemReason?) -> Case {
        Case(name: "evaluate: \(name)", expected: expected) {
            try decoded(IngestRequests.EvaluationRequest.self, body).validate()
        }
    }

    static let activities: [Case] = [
        activityCase("sessions", activity(#","sessions":3"#), nil),
        activityCase("events and revenue", activity(#","events":{"purchase":1},"revenue":{"EUR":4.99}"#), nil),
        activityCase("nothing", activity(""), .invalidActivity),
        activityCase("negative sessions", activity(#","sessions":-1"#), .invalidActivity),
        activityCase("revenue in a made-up currency", activity(#","revenue":{"eur":1}"#), .invalidActivity),
        activityCase("empty device id", activity(#","sessions":3"#, device: ""), .invalidDeviceIdentifier),
        activityCase("a conversion tag", activity(#","sessions":3,"conversionTag":"\#(tag)""#), nil),
        activityCase("a tag that is no tag", activity(#","sessions":3,"conversionTag":"t""#), .invalidConversionTag),
        evaluationCase("window 0 with no totals", #"{"advertised-item-identifier":1108187390,"window":0}"#, nil),
        evaluationCase("window 2", #"{"advertised-item-identifier":1108187390,"window":2,"sessions":4}"#, nil),
        evaluationCase("window 3", #"{"advertised-item-identifier":1108187390,"window":3}"#, .valueOutOfRange),
        evaluationCase(
            "negative sessions", #"{"advertised-item-identifier":1108187390,"window":0,"sessions":-1}"#, .invalidActivity),
    ]

    // MARK: Admin bodies and parameters

    static func adNetwork(url: String = "https://postbacks.example.com/p", extra: String = "") -> String {
        #"{"public-key":"(parsed by ingest)","postback-url":"\#(url)"\#(extra)}"#
    }
    static func adNetworkCase(_ name: String, _ body: String, _ expected: ProblemReason?) -> Case {
        Case(name: "ad network: \(name)", expected: expected) {
            try decoded(IngestRequests.AdNetwork.self, body).validate(destinations: allowList)
        }
    }
    static func publisherCase(_ name: String, _ body: String, _ expected: ProblemReason?) -> Case {
        Case(name: "publisher app: \(name)", expected: expected) {
            _ = try decoded(IngestRequests.PublisherApp.self, body).configuration(itemIdentifier: 5_838_492)
        }
    }
    static func advertisedCase(_ name: String, _ body: String, _ expected: ProblemReason?) -> Case {
        Case(name: "advertised app: \(name)", expected: expected) {
            _ = try AdvertisedAppBody.decode(Data(body.utf8), contentType: nil)
                .configuration(itemIdentifier: 1_108_187_390, destinations: allowList)
        }
    }
    static func schemaCase(_ name: String, _ body: String, _ expected: ProblemReason?) -> Case {
        Case(name: "schema: \(name)", expected: expected) { try decoded(ConversionValueSchema.self, body).validate() }
    }

    static let admin: [Case] = [
        adNetworkCase("https postback URL", adNetwork(), nil),
        adNetworkCase("allow-listed http receiver", adNetwork(url: "http://receiver:8080/postbacks"), nil),
        adNetworkCase("not a URL", adNetwork(url: "postbacks"), .invalidPostbackURL),
        adNetworkCase("http", adNetwork(url: "http://postbacks.example.com/p"), .destinationNotHTTPS),
        adNetworkCase("private address", adNetwork(url: "https://10.0.0.7/p"), .destinationPrivateAddress),
        adNetworkCase("localhost", adNetwork(url: "https://localhost/p"), .destinationPrivateAddress),
        adNetworkCase("grace of 365 days", adNetwork(extra: #","previous-key-grace-seconds":31536000"#), nil),
        adNetworkCase("grace over 365 days", adNetwork(extra: #","previous-key-grace-seconds":31536001"#), .valueOutOfRange),
        adNetworkCase("negative grace", adNetwork(extra: #","previous-key-grace-seconds":-1"#), .valueOutOfRange),
        adNetworkCase("empty SKAdNetwork key", adNetwork(extra: #","skan-public-key":"""#), .invalidPublicKey),
        adNetworkCase(
            "bad URL and bad grace", adNetwork(url: "x", extra: #","previous-key-grace-seconds":-1"#), .invalidPostbackURL),
        publisherCase("two networks", #"{"AdNetworkIdentifiers":["example123.skadnetwork","one.adattributionkit"]}"#, nil),
        publisherCase("no networks", #"{"AdNetworkIdentifiers":[]}"#, nil),
        publisherCase("an upper-case id", #"{"AdNetworkIdentifiers":["Example.skadnetwork"]}"#, .invalidAdNetworkIdentifier),
        advertisedCase("Apple's defaults", "{}", nil),
        advertisedCase("cooldown of 720 h", #"{"AttributionCooldown":{"install-cooldown-hours":720}}"#, nil),
        advertisedCase("cooldown of 721 h", #"{"AttributionCooldown":{"install-cooldown-hours":721}}"#, .valueOutOfRange),
        advertisedCase(
            "Apple's WWDC25 cooldown spelling, 721 h", #"{"AttributionCooldown":{"reengagement-cooldown-hours":721}}"#,
            .valueOutOfRange),
        advertisedCase(
            "both cooldown spellings, disagreeing",
            #"{"AttributionCooldown":{"reengagement-cooldown-hours":24,"re-engagement-cooldown-hours":48}}"#,
            .invalidConfiguration),
        advertisedCase("https copy endpoint", #"{"AttributionCopyEndpoint":"https://example.com"}"#, nil),
        advertisedCase("copy endpoint without a domain", #"{"AttributionCopyEndpoint":"https://example"}"#, .invalidCopyEndpoint),
        advertisedCase("ftp copy endpoint", #"{"AttributionCopyEndpoint":"ftp://example.com"}"#, .invalidCopyEndpoint),
        advertisedCase("http copy endpoint", #"{"AttributionCopyEndpoint":"http://example.com"}"#, .destinationNotHTTPS),
        advertisedCase("unknown key", #"{"AttributionWindow":{}}"#, .unknownKey),
        schemaCase("one window", #"{"windows":[{"window":0,"rules":[{"when":{"sessions":1},"fine":1,"coarse":"low"}]}]}"#, nil),
        schemaCase("no windows", #"{"windows":[]}"#, .invalidSchema),
        schemaCase("fine 64", #"{"windows":[{"window":0,"rules":[{"when":{},"fine":64,"coarse":"low"}]}]}"#, .invalidSchema),
        schemaCase("window 3", #"{"windows":[{"window":3,"rules":[{"when":{},"fine":1,"coarse":"low"}]}]}"#, .invalidSchema),
    ]

    static func parameterCase(_ name: String, _ expected: ProblemReason?, _ check: @escaping @Sendable () throws -> Void) -> Case
    {
        Case(name: "parameter: \(name)", expected: expected, check: check)
    }

    static let parameters: [Case] = [
        parameterCase("item 1108187390", nil) { () throws in
            #expect(try RequestParameters.itemIdentifier("1108187390") == 1_108_187_390)
        },
        parameterCase("item 0", .invalidItemIdentifier) { _ = try RequestParameters.itemIdentifier("0") },
        parameterCase("item -1", .invalidItemIdentifier) { _ = try RequestParameters.itemIdentifier("-1") },
        parameterCase("network example.skadnetwork", nil) { _ = try RequestParameters.adNetwork("example.skadnetwork") },
        parameterCase("network with a space", .invalidAdNetworkIdentifier) { _ = try RequestParameters.adNetwork("an id") },
        parameterCase("schema version 2", nil) { () throws in #expect(try RequestParameters.schemaVersion("2") == 2) },
        parameterCase("schema version 0", .invalidVersion) { _ = try RequestParameters.schemaVersion("0") },
        parameterCase("schema version v1", .invalidVersion) { _ = try RequestParameters.schemaVersion("v1") },
        parameterCase("device to erase", nil) { _ = try RequestParameters.deviceIdentifier("device-1") },
        parameterCase("empty device to erase", .invalidDeviceIdentifier) { _ = try RequestParameters.deviceIdentifier("") },
        parameterCase("device to erase, percent-encoded in the path", nil) { () throws in
            #expect(try RequestParameters.deviceIdentifier(pathSegment: "dev%20q%C3%A9%2Fx") == "dev qé/x")
        },
        parameterCase("device in the path, a bare percent", .invalidDeviceIdentifier) {
            _ = try RequestParameters.deviceIdentifier(pathSegment: "100%")
        },
        parameterCase("device in the path, empty", .invalidDeviceIdentifier) {
            _ = try RequestParameters.deviceIdentifier(pathSegment: "")
        },
        parameterCase("dead letters without count", nil) { () throws in #expect(try RequestParameters.deadLetterCount(nil) == 100)
        },
        parameterCase("dead letters, count=abc", .valueOutOfRange) { _ = try RequestParameters.deadLetterCount("abc") },
        parameterCase("dead letters, count=", .valueOutOfRange) { _ = try RequestParameters.deadLetterCount("") },
        parameterCase("dead letters, count=1000", nil) { () throws in
            #expect(try RequestParameters.deadLetterCount("1000") == 1_000)
        },
        parameterCase("dead letters, count=0", .valueOutOfRange) { _ = try RequestParameters.deadLetterCount("0") },
        parameterCase("dead letters, count=1001", .valueOutOfRange) { _ = try RequestParameters.deadLetterCount("1001") },
        parameterCase("Idempotency-Key of 255 bytes", nil) {
            try RequestChecks.idempotencyKey(String(repeating: "k", count: 255))
        },
        parameterCase("Idempotency-Key of 256 bytes", .invalidIdempotencyKey) {
            try RequestChecks.idempotencyKey(String(repeating: "k", count: 256))
        },
        parameterCase("empty Idempotency-Key", .invalidIdempotencyKey) { try RequestChecks.idempotencyKey("") },
    ]

    @Test(arguments: impressions + conversions + updates + activities + admin + parameters)
    func validates(_ testCase: Case) {
        do {
            try testCase.check()
            #expect(testCase.expected == nil, "accepted; expected \(testCase.expected?.rawValue ?? "")")
        } catch let problem as RequestProblem {
            #expect(problem.reason == testCase.expected, "refused: \(problem)")
            #expect(!problem.detail.isEmpty)
        } catch {
            Issue.record("not a RequestProblem: \(error)")
        }
    }

    /// The words clients see for the shared checks, unchanged from when the routes wrote them.
    @Test func sharedChecksKeepTheirWords() {
        #expect(throws: RequestProblem(.invalidDeviceIdentifier, "device-identifier must be 1–128 bytes")) {
            try RequestChecks.deviceIdentifier("")
        }
        #expect(
            throws: RequestProblem(.invalidTime, "time must be milliseconds since 1970 between 2000 and 2100; not 0")
        ) { try RequestChecks.time(0, field: "time") }
        #expect(throws: RequestProblem(.invalidPostbackURL, "postback-url must be an absolute https URL")) {
            try RequestChecks.destination("x", field: "postback-url", policy: DestinationPolicy())
        }
        #expect(throws: RequestProblem(.destinationInvalid, "AttributionCopyEndpoint must be an absolute https URL")) {
            try RequestChecks.destination("x", field: "AttributionCopyEndpoint", policy: DestinationPolicy())
        }
    }
}
