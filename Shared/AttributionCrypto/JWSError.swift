/// Why a JWS was refused: an opaque, stable code (mirroring Apple's impression error vocabulary)
/// plus a description that is safe to show to the sender.
public struct JWSError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        case invalidComponents = "invalid-components"
        case invalidHeader = "invalid-header"
        case invalidPayload = "invalid-payload"
        case invalidSignature = "invalid-signature"
        case unsupportedAlgorithm = "unsupported-algorithm"
        case invalidKey = "invalid-key"
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code.rawValue): \(reason)" }
}
