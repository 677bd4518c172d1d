import AttributionCrypto
import AttributionModel
import Crypto
import Foundation

/// What the harnesses share: a key fixed at a known scalar, so the committed seeds (Fuzz/seeds.py signs
/// them with the same scalar) verify and the fuzzer starts past the signature checks.
public enum FuzzFixture {
    /// The `kid` the seeds' JWS headers name.
    public static let keyID = "fuzz/0"
    /// Scalar 0x11…11: below P-256's group order, and trivial to reproduce in Python.
    public static let privateKey = try! P256.Signing.PrivateKey(rawRepresentation: Data(repeating: 0x11, count: 32))
    /// The fixed key by `kid`, and Apple's SKAdNetwork P-256 key, so that Apple's example postbacks
    /// verify through `PostbackVerifier.verifyAny` as well.
    public static let keys = JWKSet(keys: [
        JWK(publicKey: privateKey.publicKey, keyID: keyID),
        JWK(publicKey: try! SKANPublicKey.appleP256.p256Key(), keyID: "apple-skadnetwork/p256"),
    ])
    /// The same key as an ad network registers it for SKAdNetwork impressions.
    public static let skanKey = SKANPublicKey(privateKey.publicKey)
    /// When the seeds' impressions arrive (2023-11-14T22:13:20Z); their timestamps sit just before it.
    public static let receivedAt: Milliseconds = 1_700_000_000_000

    /// The verifier's rules once an impression's signature holds (`ImpressionVerification.verify`): the
    /// signed payload against the interaction the device reported, which nobody signs.
    public static func checkRules(_ payload: ImpressionPayload, interaction: Interaction?) {
        guard let interaction else { return }
        _ = ImpressionRules.check(payload, interaction: interaction, receivedAt: receivedAt, policy: .realTime)
    }
}
