import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Foundation
import Testing

@Suite("SKAdNetwork postbacks")
struct SKAdNetworkPostbackTests {
    let p256 = P256.Signing.PrivateKey()
    let p192: SKANP192SigningKey

    init() throws { p192 = try SKANP192SigningKey() }

    /// The version's key: Apple used P-192 for 1.0 and 2.0, P-256 from 2.1 on.
    func publicKey(for version: SKANPostbackVersion) -> SKANPublicKey {
        version.curve == .p192 ? p192.publicKey : SKANPublicKey(p256.publicKey)
    }

    func signed(_ postback: SKANPostback) throws -> SKANPostback {
        guard let version = postback.resolvedVersion, version.curve == .p192 else {
            return try SKANPostbackSigner.signed(postback, with: p256)
        }
        return try SKANPostbackSigner.signed(postback, with: p192)
    }

    // MARK: - Signed message per version (Apple's field lists)

    /// Apple's field order per version, with and without the optional source app (or domain).
    static let messages: [(SKANPostbackVersion, withSourceApp: [String], withoutSourceApp: [String])] = [
        (.v1, ["example123.skadnetwork", "42", "525463029", "T"], ["example123.skadnetwork", "42", "525463029", "T"]),
        (
            .v2, ["2.0", "example123.skadnetwork", "42", "525463029", "T", "true", "1234567891"],
            ["2.0", "example123.skadnetwork", "42", "525463029", "T", "true"]
        ),
        (
            .v21, ["2.1", "example123.skadnetwork", "42", "525463029", "T", "true", "1234567891"],
            ["2.1", "example123.skadnetwork", "42", "525463029", "T", "true"]
        ),
        (
            .v22, ["2.2", "example123.skadnetwork", "42", "525463029", "T", "true", "1234567891", "1"],
            ["2.2", "example123.skadnetwork", "42", "525463029", "T", "true", "1"]
        ),
        (
            .v3, ["3.0", "example123.skadnetwork", "42", "525463029", "T", "true", "1234567891", "1", "true"],
            ["3.0", "example123.skadnetwork", "42", "525463029", "T", "true", "1", "true"]
        ),
        (
            .v4, ["4.0", "example123.skadnetwork", "5239", "525463029", "T", "false", "1234567891", "1", "true", "0"],
            ["4.0", "example123.skadnetwork", "5239", "525463029", "T", "false", "1", "true", "0"]
        ),
    ]

    @Test(arguments: messages.indices)
    func signedMessageFollowsApplesFieldOrder(_ index: Int) throws {
        let (version, withSourceApp, withoutSourceApp) = Self.messages[index]
        var postback = SKANFixture.postback(version)
        postback.transactionIdentifier = "T"
        #expect(try postback.signedMessage() == withSourceApp.joined(separator: "\u{2063}"))
        if version != .v1 {
            postback.sourceAppIdentifier = nil
            #expect(try postback.signedMessage() == withoutSourceApp.joined(separator: "\u{2063}"))
        }
    }

    @Test func webAdsSignTheSourceDomainWhereAppAdsSignTheSourceApp() throws {
        var postback = SKANFixture.postback(.v4)
        postback.transactionIdentifier = "T"
        postback.sourceAppIdentifier = nil
        postback.sourceDomain = "example.com"
        let expected = ["4.0", "example123.skadnetwork", "5239", "525463029", "T", "false", "example.com", "1", "true", "0"]
        #expect(try postback.signedMessage() == expected.joined(separator: "\u{2063}"))

        var webAd = try signed(postback)
        _ = try SKANPostbackVerifier.verify(body: SKANFixture.body(webAd), publicKey: publicKey(for: .v4))
        webAd.sourceDomain = "example.org"
        let error = SKANFixture.error {
            _ = try SKANPostbackVerifier.verify(body: SKANFixture.body(webAd), publicKey: publicKey(for: .v4))
        }
        #expect(error?.code == .invalidSignature)
    }

    @Test func version1PostbacksCarryNoVersionKey() throws {
        let body = try SKANFixture.body(SKANFixture.postback(.v1))
        let object = try #require(JSONSerialization.jsonObject(with: body) as? [String: Any])
        #expect(object["version"] == nil)
        #expect(SKANFixture.postback(.v1).resolvedVersion == .v1)
    }

    // MARK: - Sign and verify every version

    @Test(arguments: SKANPostbackVersion.allCases)
    func everyVersionSignedInTestVerifies(_ version: SKANPostbackVersion) throws {
        let postback = try signed(SKANFixture.postback(version))
        let verified = try SKANPostbackVerifier.verify(body: SKANFixture.body(postback), publicKey: publicKey(for: version))
        #expect(verified == postback)
        #expect(Data(base64Encoded: postback.attributionSignature) != nil)
    }

    @Test(arguments: SKANPostbackVersion.allCases)
    func postbackWithoutTheOptionalSourceAppVerifies(_ version: SKANPostbackVersion) throws {
        var postback = SKANFixture.postback(version)
        postback.sourceAppIdentifier = nil
        postback.didWin = postback.didWin.map { _ in false }
        _ = try SKANPostbackVerifier.verify(body: SKANFixture.body(signed(postback)), publicKey: publicKey(for: version))
    }

    @Test func version1SpelledOutStillVerifies() throws {
        let postback = try signed(SKANFixture.postback(.v1))
        let body = try SKANFixture.body(postback) { $0["version"] = "1.0" }
        #expect(try SKANPostbackVerifier.verify(body: body, publicKey: p192.publicKey).resolvedVersion == .v1)
    }

    @Test(arguments: SKANAppleExample.allCases)
    func applesPublishedExamplesVerifyWithApplesKey(_ example: SKANAppleExample) throws {
        let postback = try SKANPostbackVerifier.verify(body: example.body, publicKey: .appleP256)
        #expect(postback.appIdentifier == 525_463_029)
        // With our own key instead of Apple's, they must not.
        let error = SKANFixture.error { _ = try SKANPostbackVerifier.verify(body: example.body, publicKey: publicKey(for: .v4)) }
        #expect(error?.code == .invalidSignature)
    }

    @Test func unsignedValueFieldsMayChangeWithoutBreakingTheSignature() throws {
        // Apple signs neither value nor country: they verify whatever they hold.
        var postback = try signed(SKANFixture.postback(.v4))
        postback.conversionValue = nil
        postback.coarseConversionValue = .low
        postback.countryCode = "FR"
        _ = try SKANPostbackVerifier.verify(body: SKANFixture.body(postback), publicKey: publicKey(for: .v4))
    }

    // MARK: - Refusals

    /// Every signed field of every version, changed after signing.
    static let tamperings: [(SKANPostbackVersion, SKANPostbackField)] = SKANPostbackVersion.allCases.flatMap { version in
        version.signedComponents.map(\.field)
            .filter { $0 != .version && SKANFixture.postback(version).signedText(of: $0) != nil }
            .map { (version, $0) }
    }

    @Test(arguments: tamperings.indices)
    func tamperedSignedFieldIsAnInvalidSignature(_ index: Int) throws {
        let (version, field) = Self.tamperings[index]
        var postback = try signed(SKANFixture.postback(version))
        switch field {
        case .adNetworkIdentifier: postback.adNetworkIdentifier = "other.skadnetwork"
        case .campaignIdentifier: postback.campaignIdentifier = 43
        case .sourceIdentifier: postback.sourceIdentifier = "5238"
        case .appIdentifier: postback.appIdentifier += 1
        case .transactionIdentifier: postback.transactionIdentifier = "f9ac267a-a889-44ce-b5f7-0166d11461f0"
        case .redownload: postback.redownload?.toggle()
        case .sourceAppIdentifier: postback.sourceAppIdentifier = 1
        case .sourceDomain: postback.sourceDomain = "example.org"
        case .fidelityType: postback.fidelityType = 0
        case .didWin: postback.didWin?.toggle()
        case .postbackSequenceIndex: postback.postbackSequenceIndex = 1
        default: Issue.record("\(field) is not a signed field")
        }
        let error = SKANFixture.error {
            _ = try SKANPostbackVerifier.verify(body: SKANFixture.body(postback), publicKey: publicKey(for: version))
        }
        #expect(error?.code == .invalidSignature, "\(version.rawValue) \(field.rawValue)")
    }

    @Test(arguments: SKANPostbackVersion.allCases)
    func wrongKeyOfTheRightCurveIsAnInvalidSignature(_ version: SKANPostbackVersion) throws {
        let postback = try signed(SKANFixture.postback(version))
        let other =
            version.curve == .p192 ? try SKANP192SigningKey().publicKey : SKANPublicKey(P256.Signing.PrivateKey().publicKey)
        let error = SKANFixture.error { _ = try SKANPostbackVerifier.verify(body: SKANFixture.body(postback), publicKey: other) }
        #expect(error?.code == .invalidSignature)
    }

    @Test(arguments: SKANPostbackVersion.allCases)
    func keyOfTheOtherCurveIsAnInvalidKey(_ version: SKANPostbackVersion) throws {
        let postback = try signed(SKANFixture.postback(version))
        let other = version.curve == .p192 ? SKANPublicKey(p256.publicKey) : p192.publicKey
        let error = SKANFixture.error { _ = try SKANPostbackVerifier.verify(body: SKANFixture.body(postback), publicKey: other) }
        #expect(error?.code == .invalidKey)
        #expect(error?.reason.contains("version \(version.rawValue) postbacks are signed with \(version.curve.rawValue)") == true)
    }

    @Test func signerRefusesTheWrongCurveForTheVersion() {
        #expect(SKANFixture.error { _ = try SKANPostbackSigner.sign(SKANFixture.postback(.v2), with: p256) }?.code == .invalidKey)
        #expect(
            SKANFixture.error { _ = try SKANPostbackSigner.sign(SKANFixture.postback(.v21), with: p192) }?.code == .invalidKey)
    }

    /// A signed postback relabelled with another version, and the reason it is refused.
    static let relabellings: [(from: SKANPostbackVersion, to: String, code: JWSError.Code, reason: String)] = [
        (.v4, "5.0", .invalidComponents, "version must be one of 1.0, 2.0, 2.1, 2.2, 3.0, 4.0"),
        (.v4, "", .invalidComponents, "version must be one of"),
        (.v4, "3.0", .invalidComponents, "campaign-id is missing"),
        (.v3, "4.0", .invalidComponents, "source-identifier is missing"),
        (.v3, "2.2", .invalidComponents, "did-win is not part of a version 2.2 postback"),
        (.v22, "2.1", .invalidComponents, "fidelity-type is not part of a version 2.1 postback"),
        (.v21, "2.0", .invalidKey, "version 2.0 postbacks are signed with P-192"),
        (.v21, "2.2", .invalidComponents, "fidelity-type is missing"),
        (.v2, "1.0", .invalidComponents, "redownload is not part of a version 1.0 postback"),
    ]

    @Test(arguments: relabellings.indices)
    func relabelledVersionIsRefused(_ index: Int) throws {
        let (from, to, code, reason) = Self.relabellings[index]
        let body = try SKANFixture.body(signed(SKANFixture.postback(from))) { $0["version"] = to }
        let error = SKANFixture.error { _ = try SKANPostbackVerifier.verify(body: body, publicKey: publicKey(for: from)) }
        #expect(error?.code == code)
        #expect(error?.reason.contains(reason) == true, "\(error?.reason ?? "no error")")
    }

    @Test func sameFieldsUnderAnotherVersionOfTheSameCurveDoNotVerify() throws {
        // 2.1 and 2.0 sign the same fields, but the version is one of them.
        let body = try SKANFixture.body(signed(SKANFixture.postback(.v21))) { $0["version"] = "2.0" }
        let error = SKANFixture.error { _ = try SKANPostbackVerifier.verify(body: body, publicKey: p192.publicKey) }
        #expect(error?.code == .invalidSignature)
    }

    /// Every required key of every version, removed from a signed body.
    static let removals: [(SKANPostbackVersion, String)] = SKANPostbackVersion.allCases.flatMap { version in
        (version.signedComponents.filter { !$0.isOptional && $0.field != .version }.map(\.field.rawValue)
            + ["attribution-signature"]).map { (version, $0) }
    }

    @Test(arguments: removals.indices)
    func missingRequiredFieldIsInvalidComponentsNamingIt(_ index: Int) throws {
        let (version, key) = Self.removals[index]
        let body = try SKANFixture.body(signed(SKANFixture.postback(version))) { $0[key] = nil }
        let error = SKANFixture.error { _ = try SKANPostbackVerifier.verify(body: body, publicKey: publicKey(for: version)) }
        #expect(error?.code == .invalidComponents)
        #expect(error?.reason.contains("\(key) is missing") == true, "\(error?.reason ?? "no error")")
    }

    /// Values outside what Apple documents, on a 4.0 postback; each names its key.
    static let invalidValues: [(key: String, value: any Sendable)] = [
        ("source-identifier", "5"), ("source-identifier", "12345"), ("source-identifier", "52a9"),
        ("source-identifier", 5239), ("fidelity-type", 2), ("postback-sequence-index", 3), ("conversion-value", 64),
        ("coarse-conversion-value", "huge"), ("country-code", "USA"), ("did-win", "true"), ("redownload", 1),
        ("app-id", "525463029"), ("source-domain", "example.com"), ("campaign-id", 42),
    ]

    @Test(arguments: invalidValues.indices)
    func invalidValueIsInvalidComponentsNamingTheKey(_ index: Int) throws {
        let (key, value) = Self.invalidValues[index]
        let body = try SKANFixture.body(signed(SKANFixture.postback(.v4))) { $0[key] = value }
        let error = SKANFixture.error { _ = try SKANPostbackVerifier.verify(body: body, publicKey: publicKey(for: .v4)) }
        #expect(error?.code == .invalidComponents)
        #expect(error?.reason.contains(key) == true, "\(key): \(error?.reason ?? "no error")")
    }

    @Test func fineAndCoarseValuesAreExclusive() throws {
        let body = try SKANFixture.body(signed(SKANFixture.postback(.v4))) { $0["coarse-conversion-value"] = "high" }
        let error = SKANFixture.error { _ = try SKANPostbackVerifier.verify(body: body, publicKey: publicKey(for: .v4)) }
        #expect(error?.code == .invalidComponents)
        #expect(error?.reason.contains("exclusive") == true)
    }

    @Test(arguments: ["not json", "[]", "null", #"{"version":"4.0"}"#])
    func bodyThatIsNoPostbackIsInvalidComponents(_ text: String) {
        let error = SKANFixture.error {
            _ = try SKANPostbackVerifier.verify(body: Data(text.utf8), publicKey: publicKey(for: .v4))
        }
        #expect(error?.code == .invalidComponents)
    }

    @Test(arguments: ["", "not base64!", "MEUCIQ", "MAYCAQECAQE="])
    func malformedAttributionSignatureIsAnInvalidSignature(_ signature: String) throws {
        var postback = SKANFixture.postback(.v4)
        postback.attributionSignature = signature
        let error = SKANFixture.error {
            _ = try SKANPostbackVerifier.verify(body: SKANFixture.body(postback), publicKey: publicKey(for: .v4))
        }
        #expect(error?.code == .invalidSignature)
    }

    @Test(arguments: [SKANPostbackVersion.v2, .v4])
    func truncatedDERIsAnInvalidSignature(_ version: SKANPostbackVersion) throws {
        var postback = try signed(SKANFixture.postback(version))
        let der = try #require(Data(base64Encoded: postback.attributionSignature))
        postback.attributionSignature = Data(der.dropLast(2)).base64EncodedString()
        let error = SKANFixture.error {
            _ = try SKANPostbackVerifier.verify(body: SKANFixture.body(postback), publicKey: publicKey(for: version))
        }
        #expect(error?.code == .invalidSignature)
        #expect(error?.reason.contains("DER") == true)
    }
}
