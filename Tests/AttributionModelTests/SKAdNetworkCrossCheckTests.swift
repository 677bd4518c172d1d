import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Foundation
import TestSupport
import Testing

/// An independent implementation, Python's `cryptography`, signs and verifies SKAdNetwork messages, so
/// the Swift side is not only checked against itself. The suite fails (never skips) without python3
/// and `cryptography`: a missing cross-check must be seen.
@Suite("SKAdNetwork cross-check with Python cryptography")
struct SKAdNetworkCrossCheckTests {
    /// Signs stdin (UTF-8) with a fresh key on the curve named in argv[1]; prints the base64 SPKI and
    /// the base64 DER signature on two lines.
    static let signScript = """
        import base64, sys
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        curve = {"P-256": ec.SECP256R1(), "P-192": ec.SECP192R1()}[sys.argv[1]]
        key = ec.generate_private_key(curve)
        signature = key.sign(sys.stdin.buffer.read(), ec.ECDSA(hashes.SHA256()))
        spki = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        print(base64.b64encode(spki).decode())
        print(base64.b64encode(signature).decode())
        """

    /// Verifies stdin (UTF-8) against argv[1] (base64 SPKI) and argv[2] (base64 DER); exits 0 or 1.
    static let verifyScript = """
        import base64, sys
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        key = serialization.load_der_public_key(base64.b64decode(sys.argv[1]))
        try:
            key.verify(base64.b64decode(sys.argv[2], validate=True), sys.stdin.buffer.read(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            sys.exit(1)
        """

    static let impression = SKANImpression(
        adNetworkIdentifier: AdNetworkIdentifier("example123.skadnetwork")!, sourceIdentifier: 5239,
        itunesItemIdentifier: 1_108_187_390, nonce: "68483ef6-0678-4fa6-9a13-1b3cd4a8f2d4", sourceAppIdentifier: 5_838_492,
        fidelityType: 0, timestamp: 1_719_599_957_239)

    @Test func p256ImpressionSignedByPythonVerifiesInSwift() throws {
        let output = try Self.python(Self.signScript, arguments: ["P-256"], input: Self.impression.signedMessage)
        let lines = output.split(separator: "\n").map(String.init)
        try #require(lines.count == 2, "python printed \(output)")
        let key = try SKANPublicKey(parsing: lines[0])
        #expect(key.curve == .p256)
        var impression = Self.impression
        impression.signature = lines[1]
        try impression.verifySignature(with: key)
        impression.timestamp += 1
        #expect(SKANFixture.error { try impression.verifySignature(with: key) }?.code == .invalidSignature)
    }

    @Test(arguments: [SKANPostbackVersion.v1, .v2, .v21, .v22, .v3, .v4])
    func postbackSignedByPythonVerifiesInSwift(_ version: SKANPostbackVersion) throws {
        var postback = SKANFixture.postback(version)
        let output = try Self.python(Self.signScript, arguments: [version.curve.rawValue], input: postback.signedMessage())
        let lines = output.split(separator: "\n").map(String.init)
        try #require(lines.count == 2, "python printed \(output)")
        postback.attributionSignature = lines[1]
        let verified = try SKANPostbackVerifier.verify(
            body: SKANFixture.body(postback), publicKey: SKANPublicKey(parsing: lines[0]))
        #expect(verified == postback)
    }

    @Test(arguments: SKANCurve.allCases)
    func signatureMadeInSwiftVerifiesInPython(_ curve: SKANCurve) throws {
        let message = Self.impression.signedMessage
        let spki: String
        let signature: String
        switch curve {
        case .p256:
            let key = P256.Signing.PrivateKey()
            spki = SKANPublicKey(key.publicKey).spkiBase64
            signature = try SKANSignature.sign(message: message, with: key)
        case .p192:
            let key = try SKANP192SigningKey()
            spki = key.publicKey.spkiBase64
            signature = try SKANSignature.sign(message: message, with: key)
        }
        _ = try Self.python(Self.verifyScript, arguments: [spki, signature], input: message)
        #expect(throws: TestSupportError.self) {
            _ = try Self.python(Self.verifyScript, arguments: [spki, signature], input: message + "x")
        }
    }

    /// Runs `python3 -c script arguments...` with `input` on stdin; its stdout.
    static func python(_ script: String, arguments: [String], input: String) throws -> String {
        String(decoding: try Python.run(script, arguments: arguments, input: input), as: UTF8.self)
    }
}
