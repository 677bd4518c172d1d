import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Foundation
import TestSupport
import Testing

@Suite("SKAdNetwork keys and signatures")
struct SKAdNetworkKeyTests {
    static let message = "4.0\u{2063}example123.skadnetwork\u{2063}39"

    @Test func applesPublishedKeysAreP256AndP192() {
        #expect(SKANPublicKey.appleP256.curve == .p256)
        #expect(SKANPublicKey.appleP192.curve == .p192)
        #expect(SKANPublicKey.apple(for: .v1) == .appleP192)
        #expect(SKANPublicKey.apple(for: .v2) == .appleP192)
        for version in [SKANPostbackVersion.v21, .v22, .v3, .v4] { #expect(SKANPublicKey.apple(for: version) == .appleP256) }
    }

    @Test func p256KeyReadsFromBase64SPKIAndPEM() throws {
        let key = P256.Signing.PrivateKey().publicKey
        let base64 = key.derRepresentation.base64EncodedString()
        let fromBase64 = try SKANPublicKey(parsing: base64)
        let wrapped = try SKANPublicKey(parsing: "  \(base64.prefix(20))\n\(base64.dropFirst(20))\n")
        let fromPEM = try SKANPublicKey(parsing: key.pemRepresentation)
        #expect(fromBase64 == SKANPublicKey(key) && wrapped == fromBase64 && fromPEM == fromBase64)
        #expect(fromBase64.curve == .p256)
        #expect(try fromPEM.p256Key().rawRepresentation == key.rawRepresentation)
    }

    @Test func p192KeyReadsFromBase64SPKIAndItsOwnPEM() throws {
        let key = try SKANP192SigningKey().publicKey
        #expect(key.curve == .p192)
        #expect(try SKANPublicKey(parsing: key.spkiBase64) == key)
        #expect(try SKANPublicKey(parsing: key.pemRepresentation) == key)
        #expect(try SKANPublicKey(parsing: SKANPublicKey.appleP256.pemRepresentation) == .appleP256)
        #expect(SKAdNetworkKeyTests.error { _ = try key.p256Key() }?.code == .invalidKey)
    }

    /// Ed25519 has no curve parameters: its SubjectPublicKeyInfo is a fixed prefix and 32 bytes.
    static let ed25519SPKI =
        Data([0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]) + Data(repeating: 9, count: 32)

    /// Keys that are not SKAdNetwork keys, and a word the reason must contain.
    static let refusedKeys: [(String, String, String)] = [
        ("P-384", ForeignKeys.p384SPKIBase64, "secp384r1"),
        ("Ed25519", ed25519SPKI.base64EncodedString(), "not an elliptic-curve key"),
        ("not base64", "this is not a key", "neither PEM nor base64"),
        ("empty", "  ", "empty"),
        ("base64 of garbage", Data("garbage".utf8).base64EncodedString(), "SubjectPublicKeyInfo"),
        ("trailing byte", (P256.Signing.PrivateKey().publicKey.derRepresentation + [0]).base64EncodedString(), "ends after"),
        (
            "truncated", P256.Signing.PrivateKey().publicKey.derRepresentation.dropLast(4).base64EncodedString(),
            "SubjectPublicKeyInfo"
        ),
        ("private key PEM", P256.Signing.PrivateKey().pemRepresentation, "BEGIN PUBLIC KEY"),
        ("PEM with a bad body", "-----BEGIN PUBLIC KEY-----\n!!!!\n-----END PUBLIC KEY-----", "not base64"),
    ]

    @Test(arguments: refusedKeys.indices)
    func otherKeysAreAnInvalidKeyThatSaysWhy(_ index: Int) {
        let (name, text, reason) = Self.refusedKeys[index]
        let error = Self.error { _ = try SKANPublicKey(parsing: text) }
        #expect(error?.code == .invalidKey, "\(name)")
        #expect(error?.reason.contains(reason) == true, "\(name): \(error?.reason ?? "no error")")
    }

    @Test func p192SignatureMadeByOpenSSLVerifiesAndRefusesAnotherMessage() throws {
        let key = try SKANP192SigningKey()
        let signature = try SKANSignature.sign(message: Self.message, with: key)
        try SKANSignature.verify(message: Self.message, signatureBase64: signature, publicKey: key.publicKey)
        let error = Self.error {
            try SKANSignature.verify(message: Self.message + "9", signatureBase64: signature, publicKey: key.publicKey)
        }
        #expect(error?.code == .invalidSignature)
        let other = Self.error {
            try SKANSignature.verify(message: Self.message, signatureBase64: signature, publicKey: SKANP192SigningKey().publicKey)
        }
        #expect(other?.code == .invalidSignature)
    }

    @Test func curvesAreNotInterchangeable() throws {
        // A P-192 signature checked with a P-256 key, and the other way round: both simply do not verify.
        let legacy = try SKANP192SigningKey()
        let modern = P256.Signing.PrivateKey()
        let p192Signature = try SKANSignature.sign(message: Self.message, with: legacy)
        let p256Signature = try SKANSignature.sign(message: Self.message, with: modern)
        let p192WithP256 = Self.error {
            try SKANSignature.verify(
                message: Self.message, signatureBase64: p192Signature, publicKey: SKANPublicKey(modern.publicKey))
        }
        let p256WithP192 = Self.error {
            try SKANSignature.verify(message: Self.message, signatureBase64: p256Signature, publicKey: legacy.publicKey)
        }
        #expect(p192WithP256?.code == .invalidSignature)
        #expect(p256WithP192?.code == .invalidSignature)
    }

    @Test(arguments: [0, 1, 3])
    func malformedP192SignatureIsAnInvalidSignature(_ damage: Int) throws {
        let key = try SKANP192SigningKey()
        let der = try #require(Data(base64Encoded: SKANSignature.sign(message: Self.message, with: key)))
        let damaged: Data
        switch damage {
        case 0: damaged = der.dropLast(1)
        case 1: damaged = der + [0]
        default: damaged = Data([0x30, 0x03, 0x02, 0x01])
        }
        let error = Self.error {
            try SKANSignature.verify(message: Self.message, signatureDER: damaged, publicKey: key.publicKey)
        }
        #expect(error?.code == .invalidSignature)
        #expect(error?.reason.contains("DER") == true)
    }

    static func error(_ body: () throws -> Void) -> JWSError? { SKANFixture.error(body) }
}
