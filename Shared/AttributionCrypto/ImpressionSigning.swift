import AttributionModel
import CryptoPrimitives

/// How an ad network signs an impression: compact JWS, ES256, `kid` = its ad network id.
public enum ImpressionSigning {
    public static func sign(_ payload: ImpressionPayload, with key: P256.Signing.PrivateKey) throws -> String {
        try CompactJWS.sign(
            payload: JSONCoding.encoder.encode(payload), keyID: payload.adNetworkIdentifier.rawValue, with: key)
    }
}
