import AttributionModel
import Foundation

/// A P-192 private key, made by OpenSSL. Apple signed SKAdNetwork postbacks of versions 1.0 and 2.0
/// with P-192; this exists so tests and tools can produce such postbacks. Nothing new should be
/// signed with P-192.
public struct SKANP192SigningKey: Sendable {
    /// SEC1 `ECPrivateKey` DER, as OpenSSL writes it.
    public let derRepresentation: Data
    public let publicKey: SKANPublicKey

    public init() throws(JWSError) {
        let generated = try OpenSSLEC.generateKey(curve: "P-192")
        derRepresentation = generated.privateDER
        publicKey = try SKANPublicKey(spkiDER: generated.spkiDER)
    }
}
