import AttributionCrypto
import AttributionModel
import CryptoPrimitives
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

    /// The verifier's own path for an impression report: `SignedImpression.parse` (form, algorithm, key
    /// id), then `VerifierStep` against a registry that knows the payload's network (with the fixed key,
    /// for JWS and SKAdNetwork signatures), its publisher app and its advertised app, so an input that
    /// verifies reaches every rule: payload rules against the reported interaction, replay, open views.
    public static func verify(_ report: ImpressionReport) {
        let parsed = SignedImpression.parse(report)
        guard case .success(let impression) = parsed else { return }
        let payload = impression.payload
        let network = payload.adNetworkIdentifier
        let registry = VerifierStep.Registry(
            adNetworks: [
                network.rawValue: AdNetworkRegistration(
                    adNetworkIdentifier: network, publicKey: JWK(publicKey: privateKey.publicKey, keyID: keyID).jsonString,
                    postbackURL: "https://fuzz.example/postbacks", skanPublicKey: skanKey.pemRepresentation)
            ],
            publisherApps: [
                payload.publisherItemIdentifier: PublisherAppConfiguration(
                    itemIdentifier: payload.publisherItemIdentifier, adNetworkIdentifiers: [network])
            ],
            advertisedApps: [
                payload.advertisedItemIdentifier: AdvertisedAppConfiguration(itemIdentifier: payload.advertisedItemIdentifier)
            ])
        var facts = VerifierStep.Facts()
        let envelope = Envelope(id: "fuzz", time: receivedAt, body: .impressionReported(report))
        _ = VerifierStep(policy: .realTime).step(envelope, parsed: parsed, registry: registry, facts: &facts)
    }

    /// The interaction when an input carries none: a click just before the seeds arrive.
    public static let click = Interaction.click(at: receivedAt - 1_000, loadedAt: receivedAt - 2_000)
}
