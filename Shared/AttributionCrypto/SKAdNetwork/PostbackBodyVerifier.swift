import AttributionModel
import Foundation

/// Which attribution system a postback body comes from, told by its signature field.
public enum PostbackBodyKind: String, Sendable, Hashable {
    /// Has `jws-string`: a compact JWS, ES256.
    case adAttributionKit = "adattributionkit"
    /// Has `attribution-signature`: DER ECDSA over U+2063-joined fields.
    case skAdNetwork = "skadnetwork"
}

/// The key a receiver verifies a postback body with.
public enum PostbackVerificationKey: Sendable {
    /// One public key: an AdAttributionKit postback verifies with it whatever `kid` it names; a
    /// SKAdNetwork postback verifies with it if its curve is the version's.
    case publicKey(SKANPublicKey)
    /// A published key set: AdAttributionKit postbacks by `kid`; SKAdNetwork ones by trying each key.
    case keySet(JWKSet)
    /// Apple's published keys: for AdAttributionKit the three of `JWKSet.appleAdAttributionKit`, by
    /// `kid`; for SKAdNetwork P-192 for 1.0 and 2.0, P-256 for 2.1 and later.
    case apple
}

/// A postback body whose signature verified.
public enum VerifiedPostbackBody: Sendable {
    case adAttributionKit(VerifiedPostback)
    case skAdNetwork(SKANPostback)

    public var kind: PostbackBodyKind {
        switch self {
        case .adAttributionKit: return .adAttributionKit
        case .skAdNetwork: return .skAdNetwork
        }
    }
}

/// Verifies an AdAttributionKit or a SKAdNetwork postback body: what `attribution verify-postback` runs.
public enum PostbackBodyVerifier {
    /// `jws-string` makes an AdAttributionKit body and `attribution-signature` a SKAdNetwork one; a
    /// body with both or neither is `invalidComponents`.
    public static func kind(of body: Data) throws(JWSError) -> PostbackBodyKind {
        guard let fields = try? PlainJSON.decode(SignatureFields.self, from: body) else {
            throw JWSError(.invalidComponents, "body is not a JSON object")
        }
        switch (fields.hasJWS, fields.hasAttributionSignature) {
        case (true, false): return .adAttributionKit
        case (false, true): return .skAdNetwork
        case (true, true):
            throw JWSError(.invalidComponents, "body has both jws-string and attribution-signature")
        case (false, false):
            throw JWSError(
                .invalidComponents,
                "body has neither jws-string (AdAttributionKit) nor attribution-signature (SKAdNetwork)")
        }
    }

    public static func verify(body: Data, key: PostbackVerificationKey) throws(JWSError) -> VerifiedPostbackBody {
        switch try kind(of: body) {
        case .adAttributionKit:
            let keys: JWKSet
            switch key {
            case .keySet(let set):
                keys = set
            case .publicKey(let publicKey):
                // One key given by hand: it stands for whatever kid the header names.
                keys = JWKSet(keys: [JWK(publicKey: try publicKey.p256Key(), keyID: try PostbackVerifier.keyID(inBody: body))])
            case .apple:
                keys = .appleAdAttributionKit
            }
            return .adAttributionKit(try PostbackVerifier.verify(body: body, keys: keys))
        case .skAdNetwork:
            let postback = try SKANPostbackVerifier.decode(body)
            let publicKey: SKANPublicKey
            switch key {
            case .publicKey(let given):
                publicKey = given
            case .apple:
                // An unknown version gets P-256 here and is refused by the verifier with its reason.
                publicKey = postback.resolvedVersion.map(SKANPublicKey.apple(for:)) ?? .appleP256
            case .keySet(let set):
                // SKAdNetwork postbacks name no kid: the pipeline's are signed by one of its published keys.
                _ = try PostbackVerifier.verifyAny(body: body, keys: set)
                return .skAdNetwork(postback)
            }
            try SKANPostbackVerifier.verify(postback, publicKey: publicKey)
            return .skAdNetwork(postback)
        }
    }
}

/// Which signature fields a body has, whatever their values: all `kind(of:)` needs, read without
/// building the whole object.
private struct SignatureFields: Decodable {
    let hasJWS: Bool
    let hasAttributionSignature: Bool

    private struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        hasJWS = container.contains(Key(stringValue: "jws-string"))
        hasAttributionSignature = container.contains(Key(stringValue: "attribution-signature"))
    }
}
