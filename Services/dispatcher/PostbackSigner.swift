import AttributionCrypto
import AttributionModel
import Crypto
import Foundation
import Logging
import ServiceRuntime

/// The only holder of the postback signing keys: one for production, one for postbacks from
/// development impressions (a separate `kid`, as Apple does).
struct PostbackSigner: Sendable {
    struct Key: Sendable {
        let id: String
        let privateKey: P256.Signing.PrivateKey
        var jwk: JWK { JWK(publicKey: privateKey.publicKey, keyID: id) }
    }

    let production: Key
    let development: Key

    static func load(_ environment: ServiceEnvironment, logger: Logger) throws -> PostbackSigner {
        let generating = try environment.value(.developmentMode)
        let file = try environment.value(.signingKeyFile)
        // Receivers pin the documented kid and its key: a key made up per process would change both at
        // every restart, so production needs the file.
        guard file != nil || generating else {
            throw ConfigurationError(
                key: "SIGNING_KEY_FILE", problem: "is required (or DEVELOPMENT_MODE=true to generate a key per process)")
        }
        let production = try key(file: file, setting: "SIGNING_KEY_FILE", id: try environment.value(.signingKeyID))
        let development = try key(
            file: try environment.value(.developmentSigningKeyFile), setting: "DEVELOPMENT_SIGNING_KEY_FILE",
            id: try environment.value(.developmentSigningKeyID))
        // Said once both loaded: a bad second setting stops the dispatcher with its one line alone.
        for (key, generated) in [production, development] where generated {
            logger.warning("no signing key file configured: generated one for this process", metadata: ["kid": "\(key.id)"])
        }
        return PostbackSigner(production: production.key, development: development.key)
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
        let key = order.isDevelopment ? development : production
        if order.impressionKind == .skAdNetwork {
            // A SKAdNetwork impression gets a SKAdNetwork 4.0 postback: DER signature over its fields.
            let postback = try SKANPostbackSigner.signed(SKANPostback(order: order), with: key.privateKey)
            return String(decoding: try JSONCoding.encoder.encode(postback), as: UTF8.self)
        }
        // The same bytes as JSONCoding.encoder's, written directly when the text is plain (`plainJSON`).
        let payload = try order.payload.plainJSON().map { Data($0) } ?? JSONCoding.encoder.encode(order.payload)
        let jws = try CompactJWS.sign(payload: payload, keyID: key.id, with: key.privateKey)
        let body = PostbackBody(order: order, jwsString: jws)
        return String(decoding: try body.plainJSON().map { Data($0) } ?? JSONCoding.encoder.encode(body), as: UTF8.self)
    }
}
