import AttributionCrypto
import Foundation

/// `--public-key`: `apple`, `@<path>`, or the key itself (base64 DER SubjectPublicKeyInfo, PEM, or a JWK).
enum PostbackKeyArgument {
    static func parse(_ argument: String) throws(VerifyPostbackFailure) -> PostbackVerificationKey {
        if argument == "apple" { return .apple }
        var text = argument
        if argument.hasPrefix("@") {
            let path = String(argument.dropFirst())
            guard let contents = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw VerifyPostbackFailure(code: "unreadable-input", detail: "cannot read --public-key file \(path)")
            }
            text = contents
        }
        do {
            // A JWK is an ES256 key; everything else may be P-256 or P-192.
            if text.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("{") {
                return .publicKey(SKANPublicKey(try JWK.parsePublicKey(text)))
            }
            return .publicKey(try SKANPublicKey(parsing: text))
        } catch {
            throw VerifyPostbackFailure(error)
        }
    }
}
