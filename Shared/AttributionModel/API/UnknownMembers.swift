import Foundation

/// The members of a JSON body its type did not read: the body as parsed, set beside the decoded value
/// encoded again, and every member the first has and the second lacks named by its dotted path. For the
/// admin bodies whose misspelt member would change behaviour in silence (a schema rule's `when` with
/// `sesions` would hold for every device; an `AttributionWindows` entry with `clicks` would keep the
/// default window): those are refused 400 `unknown-key` rather than stored without it.
///
/// Only for types that encode every member they decode under the same name; a `null` member is skipped
/// (it decodes as absent, and absent members are not encoded).
public enum UnknownMembers {
    /// Dotted paths (`windows.0.rules.1.when.sesions`) of the members `body` has and `decoded` lacks.
    public static func paths(in body: Any, comparedWith decoded: some Encodable) -> [String] {
        guard let encoded = try? JSONCoding.encoder.encode(decoded),
            let reread = try? JSONSerialization.jsonObject(with: encoded, options: [.fragmentsAllowed])
        else { return [] }
        return paths(in: body, comparedWith: reread, at: [])
    }

    /// The same for a JSON body not parsed yet (none when it does not parse: the decoder said why).
    public static func paths(inJSON body: Data, comparedWith decoded: some Encodable) -> [String] {
        guard let parsed = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) else { return [] }
        return paths(in: parsed, comparedWith: decoded)
    }

    static func paths(in body: Any, comparedWith reread: Any, at path: [String]) -> [String] {
        switch (body, reread) {
        case (let body as [String: Any], let reread as [String: Any]):
            return body.keys.sorted().flatMap { key -> [String] in
                guard let value = body[key], !(value is NSNull) else { return [] }
                guard let counterpart = reread[key] else { return [(path + [key]).joined(separator: ".")] }
                return paths(in: value, comparedWith: counterpart, at: path + [key])
            }
        case (let body as [Any], let reread as [Any]) where body.count == reread.count:
            return zip(body, reread).enumerated().flatMap { index, pair in
                paths(in: pair.0, comparedWith: pair.1, at: path + [String(index)])
            }
        default:
            return []
        }
    }
}
