import AttributionModel
import CryptoPrimitives
import Foundation

/// SKAdNetwork signatures: ECDSA with SHA-256 over the UTF-8 of a U+2063-joined message, DER-encoded,
/// base64 with the standard alphabet. P-256 goes through CryptoPrimitives, P-192 through OpenSSLEC.
public enum SKANSignature {
    /// Throws `invalidSignature` when the signature is not base64, not DER, or does not verify.
    public static func verify(message: String, signatureBase64: String, publicKey: SKANPublicKey) throws(JWSError) {
        try verify(message: message, signatureDER: decodeBase64(signatureBase64), publicKey: publicKey)
    }

    public static func verify(message: String, signatureDER: Data, publicKey: SKANPublicKey) throws(JWSError) {
        let bytes = Data(message.utf8)
        let isValid: Bool
        switch publicKey.curve {
        case .p256:
            // Re-encoding must give the same bytes: a truncated, padded or non-minimal DER is malformed.
            guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: signatureDER),
                signature.derRepresentation == signatureDER
            else {
                throw JWSError(.invalidSignature, "signature is not one DER ECDSA signature (SEQUENCE of r and s)")
            }
            isValid = try publicKey.p256Key().isValidSignature(signature, for: bytes)
        case .p192:
            isValid = try OpenSSLEC.isValidSignature(signatureDER, for: bytes, spkiDER: publicKey.spkiDER)
        }
        guard isValid else {
            throw JWSError(
                .invalidSignature, "signature does not verify with the \(publicKey.curve.rawValue) key over the signed fields")
        }
    }

    /// What an ad network (or the dispatcher, for SKAdNetwork winners) signs with its P-256 key: base64 DER.
    public static func sign(message: String, with key: P256.Signing.PrivateKey) throws(JWSError) -> String {
        guard let signature = try? key.signature(for: Data(message.utf8)) else {
            throw JWSError(.invalidKey, "P-256 signing failed")
        }
        return signature.derRepresentation.base64EncodedString()
    }

    /// A P-192 signature, base64 DER: only for test postbacks of versions 1.0 and 2.0.
    public static func sign(message: String, with key: SKANP192SigningKey) throws(JWSError) -> String {
        try OpenSSLEC.sign(Data(message.utf8), privateDER: key.derRepresentation).base64EncodedString()
    }

    /// Standard base64 as Apple sends it; base64url, missing padding and stray characters are refused.
    static func decodeBase64(_ text: String) throws(JWSError) -> Data {
        guard !text.isEmpty, let data = Data(base64Encoded: text) else {
            throw JWSError(.invalidSignature, "signature is not base64 (standard alphabet, padded)")
        }
        return data
    }
}
