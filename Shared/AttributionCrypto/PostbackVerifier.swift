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

/// An AdAttributionKit postback body parsed but not verified: `PostbackVerifier.parse(body:)`.
public struct ParsedPostback: Sendable {
    public let body: PostbackBody
    let jws: CompactJWS
    /// The header `kid`: which published key must verify it.
    public let keyID: String
}

/// What a postback receiver does with a body: what the reference receiver and the end-to-end tests
/// use, so both accept exactly the same postbacks.
public enum PostbackVerifier {
    /// Parses a postback HTTP body, verifies its `jws-string` (ES256 only, key chosen by the header
    /// `kid` from `keys`) and decodes the signed payload.
    public static func verify(body: Data, keys: JWKSet) throws(JWSError) -> VerifiedPostback {
        try verify(parse(body: body), keys: keys)
    }

    /// Verifies a parsed body against `keys`: a receiver parses once, picks its key set by the kid,
    /// then verifies without parsing the body again.
    public static func verify(_ parsed: ParsedPostback, keys: JWKSet) throws(JWSError) -> VerifiedPostback {
        guard let jwk = keys.key(withID: parsed.keyID) else {
            throw JWSError(.invalidKey, "no published key has kid \(parsed.keyID)")
        }
        // Signature first: nothing from the payload is trusted before it verifies.
        try parsed.jws.verify(with: jwk.publicKey())
        return try unchecked(parsed)
    }

    /// A parsed body's payload taken on trust, its signature NOT checked: for a receiver that records
    /// postbacks now and checks the recorded signatures later, elsewhere (the benchmark's, whose
    /// receiver shares the pipeline's cores: `attribution receiver --signatures later`).
    public static func unchecked(_ parsed: ParsedPostback) throws(JWSError) -> VerifiedPostback {
        guard let payload = try? PlainJSON.decode(PostbackPayload.self, from: parsed.jws.payload) else {
            throw JWSError(.invalidPayload, "signed payload is not a postback payload")
        }
        return VerifiedPostback(keyID: parsed.keyID, payload: payload, body: parsed.body, payloadData: parsed.jws.payload)
    }

    /// An AdAttributionKit body's form checked (JSON, a compact JWS with a kid), nothing verified yet.
    public static func parse(body: Data) throws(JWSError) -> ParsedPostback {
        let postback = try decodeBody(body)
        let jws = try CompactJWS(parsing: postback.jwsString)
        return ParsedPostback(body: postback, jws: jws, keyID: try requireKeyID(jws.header))
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
        try parse(body: body).keyID
    }

    static func decodeBody(_ body: Data) throws(JWSError) -> PostbackBody {
        guard let postback = try? PlainJSON.decode(PostbackBody.self, from: body) else {
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
