import Foundation

extension DecodingError {
    /// "missing key device-identifier", "wrong type at interaction.time", …: what a client can act on.
    public var plainDescription: String {
        func path(_ context: Context) -> String {
            context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch self {
        case .keyNotFound(let key, let context):
            let prefix = path(context)
            return "missing key \(prefix.isEmpty ? key.stringValue : prefix + "." + key.stringValue)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "wrong type at \(path(context)): \(context.debugDescription)"
        case .dataCorrupted(let context):
            let at = path(context)
            return at.isEmpty ? "body is not valid JSON" : "invalid value at \(at): \(context.debugDescription)"
        @unknown default:
            return "body does not match the expected JSON"
        }
    }
}
