import AttributionCrypto
import AttributionModel
import Foundation

/// The one JSON object `verify-postback` prints for a verified body.
enum VerifiedPostbackFields {
    static func json(_ verified: VerifiedPostbackBody) throws -> String {
        var fields: [String: JSONValue]
        switch verified {
        case .adAttributionKit(let postback):
            // The unsigned body fields first, then the signed payload as its signer wrote it (unknown
            // keys included): a payload key wins over a body key of the same name.
            fields = try object(JSONCoding.encoder.encode(postback.body))
            fields["jws-string"] = nil
            fields.merge(try object(postback.payloadData)) { _, signed in signed }
            fields["kid"] = .string(postback.keyID)
        case .skAdNetwork(let postback):
            // The model's fields only: a key the model does not know would look verified without being signed.
            fields = try object(JSONCoding.encoder.encode(postback))
        }
        fields["kind"] = .string(verified.kind.rawValue)
        return String(decoding: try JSONCoding.encoder.encode(fields), as: UTF8.self)
    }

    private static func object(_ data: Data) throws -> [String: JSONValue] {
        try JSONCoding.decoder.decode([String: JSONValue].self, from: data)
    }
}
