import AttributionModel
import Foundation

/// What a SKAdNetwork postback receiver does: decode the body, check its fields against its version,
/// check the key's curve against the version, then the signature over the version's signed fields.
public enum SKANPostbackVerifier {
    /// The postback, once its `attribution-signature` verifies with `publicKey`. Only the signed fields
    /// are vouched for; `conversion-value`, `coarse-conversion-value` and `country-code` never are.
    public static func verify(body: Data, publicKey: SKANPublicKey) throws(JWSError) -> SKANPostback {
        let postback = try decode(body)
        try verify(postback, publicKey: publicKey)
        return postback
    }

    public static func verify(_ postback: SKANPostback, publicKey: SKANPublicKey) throws(JWSError) {
        let version: SKANPostbackVersion
        let message: String
        do {
            version = try postback.validate()
            message = try postback.signedMessage()
        } catch {
            throw JWSError(.invalidComponents, error.description)
        }
        guard publicKey.curve == version.curve else {
            throw JWSError(
                .invalidKey,
                "version \(version.rawValue) postbacks are signed with \(version.curve.rawValue), not \(publicKey.curve.rawValue)"
            )
        }
        try SKANSignature.verify(message: message, signatureBase64: postback.attributionSignature, publicKey: publicKey)
    }

    /// The body as a postback, or `invalidComponents` naming the key that is missing or mistyped.
    public static func decode(_ body: Data) throws(JWSError) -> SKANPostback {
        do {
            return try JSONCoding.decoder.decode(SKANPostback.self, from: body)
        } catch let error as DecodingError {
            throw JWSError(.invalidComponents, "body is not a SKAdNetwork postback: \(describe(error))")
        } catch {
            throw JWSError(.invalidComponents, "body is not a SKAdNetwork postback")
        }
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context, _ key: (any CodingKey)? = nil) -> String {
            let keys = context.codingPath + (key.map { [$0] } ?? [])
            return keys.isEmpty ? "the body" : keys.map(\.stringValue).joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(path(context, key)) is missing"
        case .valueNotFound(_, let context): return "\(path(context)) is null"
        case .typeMismatch(let type, let context): return "\(path(context)) is not \(describeType(type))"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not a JSON object" : "\(path(context)) is invalid: \(context.debugDescription)"
        @unknown default: return "undecodable"
        }
    }

    private static func describeType(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "a boolean"
        case is Int.Type, is UInt64.Type, is Int64.Type: return "an integer"
        case is [String: Any].Type: return "a JSON object"
        default: return "of type \(type)"
        }
    }
}
