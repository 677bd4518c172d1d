import Foundation

extension DecodingError {
    /// "missing member interaction.time", "fineConversionValue must be an integer", …: what a client can
    /// act on, in JSON's words rather than Swift's (no `Dictionary<String, Any>`, no type names).
    public var plainDescription: String {
        switch self {
        case .keyNotFound(let key, let context):
            return "missing member \(Self.path(context.codingPath + [key]))"
        case .typeMismatch(let type, let context):
            return "\(Self.subject(context)) must be \(Self.jsonName(of: type))"
        case .valueNotFound(let type, let context):
            return "\(Self.subject(context)) must not be null: it is \(Self.jsonName(of: type))"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "the body is not valid JSON" }
            return "\(Self.subject(context)) has an invalid value\(Self.reason(context.debugDescription))"
        @unknown default:
            return "the body is not the JSON this route expects"
        }
    }

    /// The member a context points at, dotted (`interaction.time`, `conversionTypes.0`), or "the body".
    static func subject(_ context: Context) -> String {
        context.codingPath.isEmpty ? "the body" : path(context.codingPath)
    }

    static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
    }

    /// A Swift type as the JSON a client must send for it.
    static func jsonName(of type: Any.Type) -> String {
        let name = String(describing: type)
        if name.hasPrefix("Dictionary") { return "an object" }
        if name.hasPrefix("Array") { return "an array" }
        if name == "String" || name == "Substring" { return "a string" }
        if name == "Bool" { return "true or false" }
        if name.hasPrefix("Int") || name.hasPrefix("UInt") { return "an integer" }
        if ["Double", "Float", "Decimal"].contains(name) { return "a number" }
        return "of another JSON type"
    }

    /// Our own decoders' words ("unknown conversion type: x") are kept; the standard library's raw-value
    /// message ("Cannot initialize CoarseConversionValue from invalid String value huge") is not.
    static func reason(_ description: String) -> String {
        if description.hasPrefix("Cannot initialize ") {
            return description.range(of: " value ").map { ": \"\(description[$0.upperBound...])\" is not one of its values" }
                ?? ""
        }
        return description.isEmpty ? "" : ": \(description)"
    }
}

extension RequestProblem {
    /// Why `body` did not decode as a route's request (`invalid-json` either way, the reason clients
    /// already branch on), naming the member and what it must be. On Linux, JSONDecoder reports a number
    /// that does not fit its member (`1.5` or `-1` for an integer, `1e30`) as invalid JSON with no path,
    /// so such a body is told apart from broken JSON here, on the refusal path only, and its suspect
    /// numbers named.
    public init(decoding error: DecodingError, body: Data) {
        guard case .dataCorrupted(let context) = error, context.codingPath.isEmpty else {
            self.init(.invalidJSON, error.plainDescription)
            return
        }
        guard let parsed = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) else {
            self.init(.invalidJSON, "the body is not valid JSON")
            return
        }
        let suspects = Self.unfitNumbers(in: parsed, at: [])
        self.init(
            .invalidJSON,
            "a number does not fit its member (times, identifiers and counts are whole numbers within their range)"
                + (suspects.isEmpty ? "" : ": \(suspects.prefix(5).joined(separator: ", "))"))
    }

    /// Members holding a fraction, an exponent's worth or a negative number, except under `revenue`
    /// (amounts may have fractions).
    static func unfitNumbers(in value: Any, at path: [String]) -> [String] {
        if path.first == "revenue" { return [] }
        switch value {
        case let object as [String: Any]:
            return object.sorted { $0.key < $1.key }.flatMap { unfitNumbers(in: $0.value, at: path + [$0.key]) }
        case let array as [Any]:
            return array.enumerated().flatMap { unfitNumbers(in: $1, at: path + [String($0)]) }
        case let number as NSNumber:  // true and false read as 1 and 0, which fit
            let double = number.doubleValue
            let fits = double >= 0 && double <= 9.2e18 && double.rounded() == double
            return fits ? [] : [path.isEmpty ? "the body" : path.joined(separator: ".")]
        default:
            return []
        }
    }
}
