import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Foundation
import Testing

@Suite("Postback verification")
struct PostbackVerifierTests {
    static let keyID = "attribution-pipeline/0"
    let key = P256.Signing.PrivateKey()
    var keys: JWKSet { JWKSet(keys: [JWK(publicKey: key.publicKey, keyID: Self.keyID)]) }

    static let payload = PostbackPayload(
        adNetworkIdentifier: AdNetworkIdentifier("example.adattributionkit")!, sourceIdentifier: "39",
        advertisedItemIdentifier: 1_108_187_390, publisherItemIdentifier: nil, conversionType: .download,
        marketplaceIdentifier: PostbackPayload.appStoreMarketplace,
        postbackIdentifier: "0b9a7a5e-0c0e-4a53-9d53-2f1e9d4c8b21", postbackSequenceIndex: 0, didWin: true)

    static func body(jws: String, conversionValue: Int? = 42) -> Data {
        let order = PostbackOrder(
            payload: payload, adInteractionType: .click, conversionValue: conversionValue,
            coarseConversionValue: nil, countryCode: nil, isDevelopment: false)
        return try! JSONCoding.encoder.encode(PostbackBody(order: order, jwsString: jws))
    }

    func signed(_ payload: PostbackPayload = Self.payload, keyID: String = Self.keyID, with key: P256.Signing.PrivateKey? = nil)
        throws -> String
    {
        try CompactJWS.sign(payload: JSONCoding.encoder.encode(payload), keyID: keyID, with: key ?? self.key)
    }

    @Test func signedPostbackVerifies() throws {
        let verified = try PostbackVerifier.verify(body: Self.body(jws: signed()), keys: keys)
        #expect(verified.keyID == Self.keyID)
        #expect(verified.payload == Self.payload)
        #expect(verified.body.adInteractionType == .click)
        #expect(verified.body.conversionValue == 42)
        #expect(verified.payloadData == (try JSONCoding.encoder.encode(Self.payload)))
        #expect(try PostbackVerifier.keyID(inBody: Self.body(jws: signed())) == Self.keyID)
    }

    @Test func keyIsChosenByKid() throws {
        let other = P256.Signing.PrivateKey()
        let set = JWKSet(keys: [
            JWK(publicKey: key.publicKey, keyID: Self.keyID),
            JWK(publicKey: other.publicKey, keyID: "attribution-pipeline-development/0"),
        ])
        let verified = try PostbackVerifier.verify(
            body: Self.body(jws: signed(keyID: "attribution-pipeline-development/0", with: other)), keys: set)
        #expect(verified.keyID == "attribution-pipeline-development/0")
    }

    @Test func unsignedValueFieldsMayChangeButThePayloadMayNot() throws {
        // The value fields sit outside the JWS (Apple does the same), so they verify whatever they hold.
        _ = try PostbackVerifier.verify(body: Self.body(jws: signed(), conversionValue: 7), keys: keys)

        var tampered = Self.payload
        tampered.didWin = false
        let parts = try signed().split(separator: ".")
        let swapped = "\(parts[0]).\(Base64URL.encode(try JSONCoding.encoder.encode(tampered))).\(parts[2])"
        #expect(code { _ = try PostbackVerifier.verify(body: Self.body(jws: swapped), keys: keys) } == .invalidSignature)
    }

    @Test func wrongKeyIsAnInvalidSignature() throws {
        let jws = try signed(with: P256.Signing.PrivateKey())
        #expect(code { _ = try PostbackVerifier.verify(body: Self.body(jws: jws), keys: keys) } == .invalidSignature)
    }

    @Test func unknownKidIsAnInvalidKey() throws {
        let jws = try signed(keyID: "someone-else/0")
        #expect(code { _ = try PostbackVerifier.verify(body: Self.body(jws: jws), keys: keys) } == .invalidKey)
        #expect(code { _ = try PostbackVerifier.verify(body: Self.body(jws: signed()), keys: JWKSet(keys: [])) } == .invalidKey)
    }

    @Test func missingKidIsAnInvalidHeader() throws {
        let header = Base64URL.encode(Data(#"{"alg":"ES256"}"#.utf8))
        let jws = try JWSTests.sign(header: header, payload: JSONCoding.encoder.encode(Self.payload), with: key)
        #expect(code { _ = try PostbackVerifier.verify(body: Self.body(jws: jws), keys: keys) } == .invalidHeader)
    }

    @Test(arguments: ["none", "HS256"])
    func onlyES256IsAccepted(_ alg: String) throws {
        let parts = try signed().split(separator: ".")
        let header = Base64URL.encode(Data(#"{"alg":"\#(alg)","kid":"\#(Self.keyID)"}"#.utf8))
        let jws = "\(header).\(parts[1]).\(parts[2])"
        #expect(code { _ = try PostbackVerifier.verify(body: Self.body(jws: jws), keys: keys) } == .unsupportedAlgorithm)
    }

    @Test(arguments: ["", "a.b", "a.b.c.d", "a..c"])
    func jwsStringNeedsThreeParts(_ jws: String) {
        #expect(code { _ = try PostbackVerifier.verify(body: Self.body(jws: jws), keys: keys) } == .invalidComponents)
    }

    @Test(arguments: [#"not json"#, #"{"ad-interaction-type":"click"}"#, #"{"jws-string":"a.b.c"}"#, "[]"])
    func bodyMustBeAPostbackObject(_ text: String) {
        #expect(code { _ = try PostbackVerifier.verify(body: Data(text.utf8), keys: keys) } == .invalidComponents)
    }

    @Test func kidWithEscapedSlashMatchesThePublishedKey() throws {
        // Apple-style kids contain "/", which a JSON writer may escape as "\/"; parsed values must match.
        let header = Base64URL.encode(Data(#"{"alg":"ES256","kid":"attribution-pipeline\/0"}"#.utf8))
        let jws = try JWSTests.sign(header: header, payload: JSONCoding.encoder.encode(Self.payload), with: key)
        let verified = try PostbackVerifier.verify(body: Self.body(jws: jws), keys: keys)
        #expect(verified.keyID == "attribution-pipeline/0")
    }

    @Test func signedPayloadThatIsNotAPostbackIsAnInvalidPayload() throws {
        let jws = try CompactJWS.sign(payload: Data(#"{"did-win":true}"#.utf8), keyID: Self.keyID, with: key)
        #expect(code { _ = try PostbackVerifier.verify(body: Self.body(jws: jws), keys: keys) } == .invalidPayload)
    }

    @Test func payloadWithSlashEscapesAndUnknownKeysStillDecodes() throws {
        // Another signer's JSON writer: escaped slashes, extra keys, `reengagement` spelling.
        let text =
            #"{"impression-type":"app-impression","ad-network-identifier":"example.adattributionkit","#
            + #""source-identifier":"5239","advertised-item-identifier":1108187390,"conversion-type":"reengagement","#
            + #""marketplace-identifier":"com.apple.AppStore","postback-identifier":"a\/b","#
            + #""postback-sequence-index":1,"did-win":true,"future-key":1}"#
        let jws = try CompactJWS.sign(payload: Data(text.utf8), keyID: Self.keyID, with: key)
        let verified = try PostbackVerifier.verify(body: Self.body(jws: jws), keys: keys)
        #expect(verified.payload.postbackIdentifier == "a/b")
        #expect(verified.payload.conversionType == .reengagement)
        #expect(verified.payloadData == Data(text.utf8))
    }
}
