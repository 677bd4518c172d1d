import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Foundation
import Logging
import ServiceRuntime

/// The only holder of the postback signing keys, one per `SigningRole`: production, postbacks from
/// development impressions and test postbacks, each with a `kid` of its own, as Apple does.
struct PostbackSigner: Sendable {
    struct Key: Sendable {
        let id: String
        let privateKey: P256.Signing.PrivateKey
        var jwk: JWK { JWK(publicKey: privateKey.publicKey, keyID: id) }
    }

    let production: Key
    let development: Key
    let test: Key

    /// Every key, for the JWKS.
    var keys: [Key] { [production, development, test] }

    func key(for role: SigningRole) -> Key {
        switch role {
        case .production: production
        case .development: development
        case .testPostback: test
        }
    }

    static func load(_ environment: ServiceEnvironment, logger: Logger) throws -> PostbackSigner {
        let generating = try environment.value(.developmentMode)
        let file = try environment.value(.signingKeyFile)
        // Receivers pin the documented kid and its key: a key made up per process would change both at
        // every restart, so production needs the file.
        guard file != nil || generating else {
            throw ConfigurationError(
                key: "SIGNING_KEY_FILE", problem: "is required (or DEVELOPMENT_MODE=true to generate a key per process)")
        }
        let ids = [
            ("SIGNING_KEY_ID", try environment.value(.signingKeyID)),
            ("DEVELOPMENT_SIGNING_KEY_ID", try environment.value(.developmentSigningKeyID)),
            ("TEST_SIGNING_KEY_ID", try environment.value(.testSigningKeyID)),
        ]
        // A receiver tells the roles apart by kid alone, and the JWKS holds one key per kid.
        for (index, (setting, id)) in ids.enumerated() {
            if let earlier = ids[..<index].first(where: { $0.1 == id }) {
                throw ConfigurationError(
                    key: setting, problem: "is \(id), the kid of \(earlier.0) too: each key needs its own kid")
            }
        }
        let production = try key(file: file, setting: "SIGNING_KEY_FILE", id: ids[0].1)
        let development = try key(
            file: try environment.value(.developmentSigningKeyFile), setting: "DEVELOPMENT_SIGNING_KEY_FILE", id: ids[1].1)
        let test = try key(file: try environment.value(.testSigningKeyFile), setting: "TEST_SIGNING_KEY_FILE", id: ids[2].1)
        // Said once all loaded: a bad later setting stops the dispatcher with its one line alone.
        for (key, generated) in [production, development, test] where generated {
            logger.warning("no signing key file configured: generated one for this process", metadata: ["kid": "\(key.id)"])
        }
        return PostbackSigner(production: production.key, development: development.key, test: test.key)
    }

    /// The key from `file`, or one generated for this process (`generated`).
    static func key(file: String?, setting: String, id: String) throws -> (key: Key, generated: Bool) {
        if let file {
            guard let pem = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw ConfigurationError(key: setting, problem: "cannot read \(file)")
            }
            do {
                return (Key(id: id, privateKey: try SigningKey.load(pem: pem)), false)
            } catch {
                throw ConfigurationError(key: setting, problem: "\(file): \(error)")
            }
        }
        // A generated key gets a kid of its own, so postbacks signed before a restart still verify
        // against the JWKS (which keeps every published key).
        let privateKey = SigningKey.generate()
        let fingerprint = SHA256.hash(data: privateKey.publicKey.x963Representation).prefix(4)
            .map { String(format: "%02x", $0) }.joined()
        return (Key(id: "\(id)-\(fingerprint)", privateKey: privateKey), true)
    }

    /// The exact HTTP body for an order: the payload signed as a compact JWS, the value fields beside it.
    func body(for order: PostbackOrder) throws -> String {
        let signing = key(for: order.signingRole)
        if order.impressionKind == .skAdNetwork {
            // A SKAdNetwork impression gets a SKAdNetwork 4.0 postback: DER signature over its fields.
            let postback = try SKANPostbackSigner.signed(SKANPostback(order: order), with: signing.privateKey)
            return String(decoding: try JSONCoding.encoder.encode(postback), as: UTF8.self)
        }
        // The same bytes as JSONCoding.encoder's, written directly when the text is plain (`plainJSON`).
        let payload = try order.payload.plainJSON().map { Data($0) } ?? JSONCoding.encoder.encode(order.payload)
        let jws = try CompactJWS.sign(payload: payload, keyID: signing.id, with: signing.privateKey)
        let body = PostbackBody(order: order, jwsString: jws)
        return String(decoding: try body.plainJSON().map { Data($0) } ?? JSONCoding.encoder.encode(body), as: UTF8.self)
    }
}
