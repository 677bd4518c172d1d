import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Foundation
import Testing

@Suite("SKAdNetwork 4.0 impressions")
struct SKAdNetworkImpressionTests {
    let key = P256.Signing.PrivateKey()

    static let unsigned = SKANImpression(
        adNetworkIdentifier: AdNetworkIdentifier("example123.skadnetwork")!, sourceIdentifier: 5239,
        itunesItemIdentifier: 1_108_187_390, nonce: "68483ef6-0678-4fa6-9a13-1b3cd4a8f2d4", sourceAppIdentifier: 5_838_492,
        fidelityType: 1, timestamp: 1_719_599_957_239)

    func signed(_ impression: SKANImpression = Self.unsigned, with key: P256.Signing.PrivateKey? = nil) throws -> SKANImpression {
        var signed = impression
        signed.signature = try SKANSignature.sign(message: impression.signedMessage, with: key ?? self.key)
        return signed
    }

    var publicKey: SKANPublicKey { SKANPublicKey(key.publicKey) }

    @Test func signedMessageIsTheSpecFieldsJoinedByInvisibleSeparators() {
        // version, ad-network-id, source-identifier, itunes-item-id, nonce, source-app-id, fidelity-type, timestamp.
        let expected =
            "4.0\u{2063}example123.skadnetwork\u{2063}5239\u{2063}1108187390\u{2063}68483ef6-0678-4fa6-9a13-1b3cd4a8f2d4"
            + "\u{2063}5838492\u{2063}1\u{2063}1719599957239"
        #expect(Self.unsigned.signedMessage == expected)
        // U+2063 is E2 81 A3 in UTF-8: seven separators between eight fields.
        let separators = Array(Self.unsigned.signedMessage.utf8).windows(ofCount: 3).filter {
            $0.elementsEqual([0xE2, 0x81, 0xA3])
        }
        #expect(separators.count == 7)
    }

    @Test func decodesApplesKeySpellings() throws {
        let json = #"""
            {"version":"4.0","ad-network-id":"example123.skadnetwork","source-identifier":5239,"itunes-item-id":1108187390,
             "nonce":"68483ef6-0678-4fa6-9a13-1b3cd4a8f2d4","source-app-id":5838492,"fidelity-type":1,
             "timestamp":1719599957239,"signature":"MEQCIA=="}
            """#
        let decoded = try JSONCoding.decoder.decode(SKANImpression.self, from: Data(json.utf8))
        var expected = Self.unsigned
        expected.signature = "MEQCIA=="
        #expect(decoded == expected)
        #expect(try JSONCoding.decoder.decode(SKANImpression.self, from: JSONCoding.encoder.encode(decoded)) == decoded)
    }

    @Test(arguments: [(1, InteractionType.click), (0, .view)])
    func fidelityTypeIsTheInteraction(_ fidelity: Int, _ expected: InteractionType) {
        var impression = Self.unsigned
        impression.fidelityType = fidelity
        #expect(impression.interactionType == expected)
    }

    @Test func convertsToThePoolsImpressionShape() {
        let payload = Self.unsigned.impressionPayload()
        #expect(
            payload
                == ImpressionPayload(
                    impressionIdentifier: "68483ef6-0678-4fa6-9a13-1b3cd4a8f2d4",
                    adNetworkIdentifier: AdNetworkIdentifier("example123.skadnetwork")!, advertisedItemIdentifier: 1_108_187_390,
                    publisherItemIdentifier: 5_838_492, sourceIdentifier: 5239, timestamp: 1_719_599_957_239))
        #expect(!Self.unsigned.isDevelopment)
        var development = Self.unsigned
        development.sourceAppIdentifier = 0
        #expect(development.isDevelopment && development.impressionPayload().isDevelopment)
    }

    @Test func signedImpressionVerifies() throws {
        try signed().verifySignature(with: publicKey)
        try SKANSignature.verify(message: Self.unsigned.signedMessage, signatureBase64: signed().signature, publicKey: publicKey)
    }

    /// Each signed field changed after signing.
    static let tamperings: [(String, @Sendable (inout SKANImpression) -> Void)] = [
        ("ad-network-id", { $0.adNetworkIdentifier = AdNetworkIdentifier("other.skadnetwork")! }),
        ("source-identifier", { $0.sourceIdentifier = 5238 }),
        ("itunes-item-id", { $0.itunesItemIdentifier += 1 }),
        ("nonce", { $0.nonce = "68483ef6-0678-4fa6-9a13-1b3cd4a8f2d5" }),
        ("source-app-id", { $0.sourceAppIdentifier = 0 }),
        ("fidelity-type (click → view)", { $0.fidelityType = 0 }),
        ("timestamp", { $0.timestamp += 1 }),
    ]

    @Test(arguments: tamperings.indices)
    func tamperedFieldIsAnInvalidSignature(_ index: Int) throws {
        var impression = try signed()
        Self.tamperings[index].1(&impression)
        let error = SKANFixture.error { try impression.verifySignature(with: publicKey) }
        #expect(error?.code == .invalidSignature, "\(Self.tamperings[index].0)")
    }

    @Test func wrongKeyIsAnInvalidSignature() throws {
        let impression = try signed(with: P256.Signing.PrivateKey())
        #expect(SKANFixture.error { try impression.verifySignature(with: publicKey) }?.code == .invalidSignature)
    }

    /// A signature field far longer than any signature is refused at ingest (a 60,000-character
    /// one would otherwise be accepted and kept in every refusal list).
    @Test func anOverlongSignatureIsRefusedBeforeThePipeline() throws {
        var impression = try signed()
        #expect(throws: Never.self) { try impression.validate() }
        impression.signature = String(repeating: "A", count: 60_000)
        let overlong = impression
        #expect(throws: SKANFieldProblem.self) { try overlong.validate() }
        do { try impression.validate() } catch { #expect(error.key == "signature") }
        impression.signature = String(repeating: "A", count: SKANImpression.maximumSignatureLength)
        #expect(throws: Never.self) { try impression.validate() }
    }

    @Test func p192KeyIsRefusedForAnImpression() throws {
        let legacy = try SKANP192SigningKey()
        var impression = Self.unsigned
        impression.signature = try SKANSignature.sign(message: impression.signedMessage, with: legacy)
        let error = SKANFixture.error { try impression.verifySignature(with: legacy.publicKey) }
        #expect(error?.code == .invalidKey)
        #expect(error?.reason.contains("P-256") == true)
    }

    /// Signatures that are not one base64 DER ECDSA signature.
    static let malformedSignatures: [(String, @Sendable (String) -> String)] = [
        ("not base64", { _ in "not base64!" }),
        ("base64url alphabet", { $0.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") + "-_" }),
        ("padding dropped", { String($0.trimmingCharacters(in: CharacterSet(charactersIn: "=")).dropLast()) }),
        ("truncated DER", { Data(Data(base64Encoded: $0)!.dropLast(3)).base64EncodedString() }),
        ("DER with a trailing byte", { (Data(base64Encoded: $0)! + [0]).base64EncodedString() }),
        ("JOSE R‖S instead of DER", { _ in Data(repeating: 7, count: 64).base64EncodedString() }),
        ("empty", { _ in "" }),
    ]

    @Test(arguments: malformedSignatures.indices)
    func malformedSignatureIsAnInvalidSignature(_ index: Int) throws {
        var impression = try signed()
        impression.signature = Self.malformedSignatures[index].1(impression.signature)
        let error = SKANFixture.error {
            try SKANSignature.verify(
                message: impression.signedMessage, signatureBase64: impression.signature, publicKey: publicKey)
        }
        #expect(error?.code == .invalidSignature, "\(Self.malformedSignatures[index].0)")
    }

    /// Fields that make an impression unusable before any signature is checked.
    static let invalidFields: [(key: String, edit: @Sendable (inout SKANImpression) -> Void)] = [
        ("version", { $0.version = "3.0" }),
        ("source-identifier", { $0.sourceIdentifier = 10_000 }),
        ("source-identifier", { $0.sourceIdentifier = -1 }),
        ("nonce", { $0.nonce = "68483EF6-0678-4FA6-9A13-1B3CD4A8F2D4" }),
        ("nonce", { $0.nonce = "not-a-uuid" }),
        ("fidelity-type", { $0.fidelityType = 2 }),
        ("signature", { $0.signature = "" }),
    ]

    @Test(arguments: invalidFields.indices)
    func invalidFieldIsInvalidComponentsNamingTheKey(_ index: Int) throws {
        var impression = try signed()
        Self.invalidFields[index].edit(&impression)
        let error = SKANFixture.error { try impression.verifySignature(with: publicKey) }
        #expect(error?.code == .invalidComponents)
        #expect(error?.reason.hasPrefix(Self.invalidFields[index].key) == true, "\(error?.reason ?? "no error")")
    }
}

extension Array {
    /// Consecutive runs of `count` elements.
    fileprivate func windows(ofCount count: Int) -> [ArraySlice<Element>] {
        guard self.count >= count else { return [] }
        return (0...(self.count - count)).map { self[$0..<($0 + count)] }
    }
}
