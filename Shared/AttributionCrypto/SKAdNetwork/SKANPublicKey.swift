import AttributionModel
import CryptoPrimitives
import Foundation

/// A public key that verifies SKAdNetwork signatures: P-256 (impressions, and postbacks 2.1 and later)
/// or P-192 (Apple's key for postbacks 1.0 and 2.0). Read from what Apple publishes, a base64 DER
/// SubjectPublicKeyInfo, or from PEM.
public struct SKANPublicKey: Sendable, Hashable {
    public let curve: SKANCurve
    /// The DER SubjectPublicKeyInfo.
    public let spkiDER: Data
    /// The key for P-256; P-192 goes through OpenSSLEC.
    let p256: P256.Signing.PublicKey?

    public init(_ key: P256.Signing.PublicKey) {
        self.init(curve: .p256, spkiDER: key.derRepresentation, p256: key)
    }

    private init(curve: SKANCurve, spkiDER: Data, p256: P256.Signing.PublicKey?) {
        self.curve = curve
        self.spkiDER = spkiDER
        self.p256 = p256
    }

    /// Any EC SubjectPublicKeyInfo on P-256 or P-192; other curves and key types are an `invalidKey`
    /// that names what was found.
    public init(spkiDER: Data) throws(JWSError) {
        let name = try OpenSSLEC.curveName(spkiDER: spkiDER)
        switch name {
        case "prime256v1":
            guard let key = try? P256.Signing.PublicKey(derRepresentation: spkiDER) else {
                throw JWSError(.invalidKey, "P-256 public key is not a valid point")
            }
            self.init(key)
        case "prime192v1":
            self.init(curve: .p192, spkiDER: spkiDER, p256: nil)
        default:
            throw JWSError(.invalidKey, "public key is on curve \(name); SKAdNetwork keys are P-256 or P-192")
        }
    }

    /// Base64 DER SubjectPublicKeyInfo (Apple's published form; whitespace ignored) or PEM
    /// (`-----BEGIN PUBLIC KEY-----`).
    public init(parsing text: String) throws(JWSError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw JWSError(.invalidKey, "public key is empty") }
        if trimmed.hasPrefix("-----BEGIN") {
            try self.init(spkiDER: Self.derFromPEM(trimmed))
            return
        }
        guard let der = Data(base64Encoded: trimmed.filter { !$0.isWhitespace }) else {
            throw JWSError(.invalidKey, "public key is neither PEM nor base64 DER SubjectPublicKeyInfo")
        }
        try self.init(spkiDER: der)
    }

    /// The form Apple publishes: base64 of the DER SubjectPublicKeyInfo.
    public var spkiBase64: String { spkiDER.base64EncodedString() }

    public var pemRepresentation: String {
        let body = spkiDER.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN PUBLIC KEY-----\n\(body)\n-----END PUBLIC KEY-----"
    }

    /// The key as an ES256 key, for AdAttributionKit JWS; a P-192 key is an `invalidKey`.
    public func p256Key() throws(JWSError) -> P256.Signing.PublicKey {
        guard let p256 else { throw JWSError(.invalidKey, "a \(curve.rawValue) key cannot verify ES256 (P-256) signatures") }
        return p256
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.spkiDER == rhs.spkiDER }
    public func hash(into hasher: inout Hasher) { hasher.combine(spkiDER) }

    private static func derFromPEM(_ pem: String) throws(JWSError) -> Data {
        let lines = pem.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        guard lines.first == "-----BEGIN PUBLIC KEY-----", lines.last == "-----END PUBLIC KEY-----", lines.count > 2 else {
            throw JWSError(.invalidKey, "PEM must be one -----BEGIN PUBLIC KEY----- block (SubjectPublicKeyInfo)")
        }
        guard let der = Data(base64Encoded: lines.dropFirst().dropLast().joined()) else {
            throw JWSError(.invalidKey, "PEM body is not base64")
        }
        return der
    }
}

extension SKANPublicKey {
    /// Apple's published key for postbacks 2.1 and later [Verifying an install-validation postback].
    public static let appleP256 = try! SKANPublicKey(parsing: applePublishedP256)

    /// The same key as Apple publishes it (base64 DER); it also signs production AdAttributionKit postbacks.
    static let applePublishedP256 =
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEWdp8GPcGqmhgzEFj9Z2nSpQVddayaPe4FMzqM9wib1+aHaaIzoHoLN9zW4K8y4SPykE3YVK3sVqW6Af0lfx3gg=="

    /// Apple's published key for postbacks 1.0 and 2.0 [SKAdNetwork 1 and 2 release notes].
    public static let appleP192 = try! SKANPublicKey(
        parsing: "MEkwEwYHKoZIzj0CAQYIKoZIzj0DAQEDMgAEMyHD625uvsmGq4C43cQ9BnfN2xslVT5V1nOmAMP6qaRRUll3PB1JYmgSm+62sosG")

    /// The key Apple signs postbacks of `version` with.
    public static func apple(for version: SKANPostbackVersion) -> SKANPublicKey {
        version.curve == .p192 ? appleP192 : appleP256
    }
}
