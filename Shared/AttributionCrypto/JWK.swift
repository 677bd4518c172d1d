import AttributionModel
import CryptoPrimitives
import Foundation

/// A P-256 public key as a JSON Web Key (RFC 7517), the form the pipeline publishes and stores.
public struct JWK: Sendable, Codable, Hashable {
    public var kty: String
    public var crv: String
    public var x: String
    public var y: String
    public var kid: String?
    public var alg: String?
    public var use: String?

    public init(publicKey: P256.Signing.PublicKey, keyID: String?) {
        // x963 form is 0x04 ‖ X ‖ Y, 32 bytes each.
        let point = publicKey.x963Representation
        kty = "EC"
        crv = "P-256"
        x = Base64URL.encode(point.dropFirst().prefix(32))
        y = Base64URL.encode(point.suffix(32))
        kid = keyID
        alg = "ES256"
        use = "sig"
    }

    public func publicKey() throws(JWSError) -> P256.Signing.PublicKey {
        guard kty == "EC", crv == "P-256", let x = Base64URL.decode(x), let y = Base64URL.decode(y),
            x.count == 32, y.count == 32,
            let key = try? P256.Signing.PublicKey(x963Representation: [0x04] + x + y)
        else { throw JWSError(.invalidKey, "expected an EC P-256 JWK with 32-byte x and y") }
        return key
    }

    /// Reads an ES256 public key given as PEM (`-----BEGIN PUBLIC KEY-----`) or as a JWK JSON object.
    public static func parsePublicKey(_ text: String) throws(JWSError) -> P256.Signing.PublicKey {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("-----BEGIN") {
            guard let key = try? P256.Signing.PublicKey(pemRepresentation: trimmed) else {
                throw JWSError(.invalidKey, "PEM is not a P-256 public key")
            }
            return key
        }
        // A private key sent by mistake is refused, not quietly stripped to its public half: its sender
        // must learn that it left their hands. A JWK meant for another algorithm is not an ES256 key.
        if let object = try? JSONSerialization.jsonObject(with: Data(trimmed.utf8)) as? [String: Any] {
            if object["d"] != nil {
                throw JWSError(.invalidKey, "the JWK holds a private key (d): register the public key only, and replace this one")
            }
            if let algorithm = object["alg"] as? String, algorithm != "ES256" {
                throw JWSError(.invalidKey, "the JWK's alg is \(algorithm); ad network keys are ES256 (P-256)")
            }
        }
        guard let jwk = try? JSONDecoder().decode(JWK.self, from: Data(trimmed.utf8)) else {
            throw JWSError(.invalidKey, "public key must be PEM or a JWK JSON object")
        }
        return try jwk.publicKey()
    }

    /// The JWK as compact JSON text with sorted keys.
    public var jsonString: String {
        (try? String(decoding: JSONCoding.encoder.encode(self), as: UTF8.self)) ?? "{}"
    }
}

/// `{"keys": [...]}` as served at `/.well-known/jwks.json`.
public struct JWKSet: Sendable, Codable, Hashable {
    public var keys: [JWK]
    public init(keys: [JWK]) { self.keys = keys }

    public func key(withID keyID: String) -> JWK? { keys.first { $0.kid == keyID } }
}
