import AttributionModel
import CryptoPrimitives
import Foundation

/// Signs SKAdNetwork postbacks over their version's signed fields: for tests, and for the dispatcher
/// when a SKAdNetwork impression wins. The key's curve must be the version's (P-256 from 2.1 on).
public enum SKANPostbackSigner {
    /// The `attribution-signature` for `postback` (its current signature is ignored): base64 DER.
    public static func sign(_ postback: SKANPostback, with key: P256.Signing.PrivateKey) throws(JWSError) -> String {
        try SKANSignature.sign(message: message(postback, curve: .p256), with: key)
    }

    /// A P-192 signature for a 1.0 or 2.0 test postback.
    public static func sign(_ postback: SKANPostback, with key: SKANP192SigningKey) throws(JWSError) -> String {
        try SKANSignature.sign(message: message(postback, curve: .p192), with: key)
    }

    /// `postback` with its `attribution-signature` set.
    public static func signed(_ postback: SKANPostback, with key: P256.Signing.PrivateKey) throws(JWSError) -> SKANPostback {
        var signed = postback
        signed.attributionSignature = try sign(postback, with: key)
        return signed
    }

    public static func signed(_ postback: SKANPostback, with key: SKANP192SigningKey) throws(JWSError) -> SKANPostback {
        var signed = postback
        signed.attributionSignature = try sign(postback, with: key)
        return signed
    }

    private static func message(_ postback: SKANPostback, curve: SKANCurve) throws(JWSError) -> String {
        let version: SKANPostbackVersion
        let message: String
        do {
            version = try postback.validate()
            message = try postback.signedMessage()
        } catch {
            throw JWSError(.invalidComponents, error.description)
        }
        guard version.curve == curve else {
            throw JWSError(
                .invalidKey,
                "version \(version.rawValue) postbacks are signed with \(version.curve.rawValue), not \(curve.rawValue)")
        }
        return message
    }
}
