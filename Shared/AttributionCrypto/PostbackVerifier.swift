import AttributionModel
import Foundation

/// A postback whose `jws-string` verified against a published key.
public struct VerifiedPostback: Sendable {
    /// The header `kid` that named the verifying key.
    public let keyID: String
    public let payload: PostbackPayload
    /// The HTTP body as sent; its value fields sit outside the JWS and are not signed.
    public let body: PostbackBody
    /// The signed payload bytes exactly as the signer encoded them, for receivers that keep the original.
    /// For a SKAdNetwork postback: the whole body (its signed fields sit in it).
    public let payloadData: Data
    /// AdAttributionKit, or SKAdNetwork seen through the same fields (`verifyAny`); a SKAdNetwork body
    /// has no JWS, so `body.jwsString` is empty then.
    public var kind: PostbackBodyKind = .adAttributionKit
}

/// What a postback receiver does with a body: what the reference receiver and the end-to-end tests
/// use, so both accept exactly the same postbacks.
public enum PostbackVerifier {
    /// Parses a postback HTTP body, verifies its `jws-string` (ES256 only, key chosen by the header
    /// `kid` from `keys`) and decodes the signed payload.
    public static func verify(body: Data, keys: JWKSet) throws(JWSError) -> VerifiedPostback {
        let postback = try decodeBody(body)
        let jws = try CompactJWS(parsing: postback.jwsString)
        let keyID = try requireKeyID(jws.header)
        guard let jwk = keys.key(withID: keyID) else {
            throw JWSError(.invalidKey, "no published key has kid \(keyID)")
        }
        // Signature first: nothing from the payload is trusted before it verifies.
        try jws.verify(with: jwk.publicKey())
        guard let payload = try? JSONCoding.decoder.decode(PostbackPayload.self, from: jws.payload) else {
            throw JWSError(.invalidPayload, "signed payload is not a postback payload")
        }
        return VerifiedPostback(keyID: keyID, payload: payload, body: postback, payloadData: jws.payload)
    }

    /// Verifies an AdAttributionKit body (key by `kid`) or a SKAdNetwork 4.0 body (which names no key:
    /// each P-256 key of the set is tried) and returns both through the AdAttributionKit fields: what
    /// the reference receiver and the pipeline tests use, so SKAdNetwork winners are checked alike.
    public static func verifyAny(body: Data, keys: JWKSet) throws(JWSError) -> VerifiedPostback {
        guard try PostbackBodyVerifier.kind(of: body) == .skAdNetwork else { return try verify(body: body, keys: keys) }
        let postback = try SKANPostbackVerifier.decode(body)
        var lastError = JWSError(.invalidKey, "the key set is empty")
        for jwk in keys.keys {
            do {
                try SKANPostbackVerifier.verify(postback, publicKey: SKANPublicKey(try jwk.publicKey()))
            } catch {
                lastError = error
                continue
            }
            guard let payload = postback.commonPayload else {
                throw JWSError(.invalidPayload, "ad-network-id \(postback.adNetworkIdentifier) is not a valid ad network id")
            }
            let common = PostbackBody(
                order: PostbackOrder(
                    payload: payload, adInteractionType: postback.interactionType, conversionValue: postback.conversionValue,
                    coarseConversionValue: postback.coarseConversionValue, countryCode: postback.countryCode,
                    isDevelopment: false),
                jwsString: "")
            return VerifiedPostback(
                keyID: jwk.kid ?? "", payload: payload, body: common, payloadData: body, kind: .skAdNetwork)
        }
        throw keys.keys.count == 1
            ? lastError : JWSError(.invalidSignature, "no key of the set verifies the attribution-signature")
    }

    /// The `kid` a body's JWS names, without verifying anything: a receiver uses it to decide whether
    /// its cached key set is stale before calling `verify`.
    public static func keyID(inBody body: Data) throws(JWSError) -> String {
        try requireKeyID(CompactJWS(parsing: decodeBody(body).jwsString).header)
    }

    static func decodeBody(_ body: Data) throws(JWSError) -> PostbackBody {
        guard let postback = try? JSONCoding.decoder.decode(PostbackBody.self, from: body) else {
            throw JWSError(
                .invalidComponents, "body must be a JSON object with jws-string and ad-interaction-type")
        }
        return postback
    }

    static func requireKeyID(_ header: JWSHeader) throws(JWSError) -> String {
        // Parsed value, not raw header text: `apple-cas-identifier\/0` names `apple-cas-identifier/0`.
        guard let keyID = header.kid, !keyID.isEmpty else {
            throw JWSError(.invalidHeader, "header has no kid")
        }
        return keyID
    }
}
