import CryptoPrimitives
import Foundation

/// Loading and generating P-256 private keys (PEM, PKCS#8 or SEC1), for ad networks and the dispatcher.
public enum SigningKey {
    public static func generate() -> P256.Signing.PrivateKey { P256.Signing.PrivateKey() }

    public static func load(pem: String) throws(JWSError) -> P256.Signing.PrivateKey {
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
            throw JWSError(.invalidKey, "PEM is not a P-256 private key")
        }
        return key
    }

    public static func load(file path: String) throws -> P256.Signing.PrivateKey {
        try load(pem: String(contentsOfFile: path, encoding: .utf8))
    }
}
