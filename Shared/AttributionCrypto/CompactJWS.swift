import AttributionModel
import CryptoPrimitives
import Foundation

/// The protected header fields we read. Parsed values are compared, never raw text: a header may
/// escape `/` as `\/`.
public struct JWSHeader: Sendable, Codable, Hashable {
    public var alg: String
    public var kid: String?
    public var typ: String?

    public init(alg: String = "ES256", kid: String?, typ: String? = nil) {
        self.alg = alg
        self.kid = kid
        self.typ = typ
    }
}

/// A parsed compact JWS (RFC 7515): header, payload and the raw R‖S signature.
public struct CompactJWS: Sendable {
    public let header: JWSHeader
    public let payload: Data
    public let signature: Data
    /// `base64url(header) "." base64url(payload)`: the bytes the signature covers.
    public let signingInput: Data

    /// Parses the three parts. Checks form only; `verify(with:)` checks the signature.
    public init(parsing compact: String) throws(JWSError) {
        // An ASCII JWS (every valid one) is cut at its dots as bytes: `split` on Characters walks
        // grapheme clusters and cost about a tenth of the verifier's time. Anything else takes the
        // Character path, so a malformed report is refused with the same reason as before.
        let utf8 = compact.utf8
        if utf8.allSatisfy({ $0 < 0x80 }) {
            let dot = UInt8(ascii: ".")
            let first = utf8.firstIndex(of: dot) ?? utf8.endIndex
            let second = first == utf8.endIndex ? first : (utf8[utf8.index(after: first)...].firstIndex(of: dot) ?? utf8.endIndex)
            let third =
                second == utf8.endIndex ? second : (utf8[utf8.index(after: second)...].firstIndex(of: dot) ?? utf8.endIndex)
            guard second != utf8.endIndex, third == utf8.endIndex else {
                throw JWSError(.invalidComponents, "a compact JWS has three non-empty base64url parts")
            }
            try self.init(
                header: utf8[..<first], payload: utf8[utf8.index(after: first)..<second],
                signature: utf8[utf8.index(after: second)...], signingInput: utf8[..<second])
            return
        }
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw JWSError(.invalidComponents, "a compact JWS has three non-empty base64url parts")
        }
        try self.init(
            header: parts[0].utf8, payload: parts[1].utf8, signature: parts[2].utf8,
            signingInput: Substring("\(parts[0]).\(parts[1])").utf8)
    }

    /// The parts as UTF-8 bytes, decoded and checked in the order that gives the most useful reason first.
    private init(
        header headerText: Substring.UTF8View, payload payloadText: Substring.UTF8View,
        signature signatureText: Substring.UTF8View, signingInput: Substring.UTF8View
    ) throws(JWSError) {
        guard !headerText.isEmpty, !payloadText.isEmpty, !signatureText.isEmpty else {
            throw JWSError(.invalidComponents, "a compact JWS has three non-empty base64url parts")
        }
        guard let headerData = Base64URL.decode(bytes: headerText),
            let header = try? PlainJSON.decode(JWSHeader.self, from: headerData)
        else { throw JWSError(.invalidHeader, "header is not base64url JSON with an alg") }
        guard let payload = Base64URL.decode(bytes: payloadText) else {
            throw JWSError(.invalidPayload, "payload is not base64url")
        }
        guard let signature = Base64URL.decode(bytes: signatureText) else {
            throw JWSError(.invalidSignature, "signature is not base64url")
        }
        self.header = header
        self.payload = payload
        self.signature = signature
        self.signingInput = Data(signingInput)
    }

    /// ES256 only: `none`, HMAC and everything else are refused before any key is touched.
    public func verify(with key: P256.Signing.PublicKey) throws(JWSError) {
        guard header.alg == "ES256" else {
            throw JWSError(.unsupportedAlgorithm, "alg must be ES256, not \(header.alg)")
        }
        guard signature.count == 64,
            let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
        else { throw JWSError(.invalidSignature, "ES256 signatures are 64 bytes (R‖S)") }
        guard key.isValidSignature(ecdsa, for: signingInput) else {
            throw JWSError(.invalidSignature, "signature does not verify with the key")
        }
    }

    /// Signs `payload` as a compact JWS with `alg` ES256 and the given `kid`.
    public static func sign(payload: Data, keyID: String, with key: P256.Signing.PrivateKey) throws -> String {
        let headerJSON = try JSONCoding.encoder.encode(JWSHeader(kid: keyID))
        let input = Base64URL.encode(headerJSON) + "." + Base64URL.encode(payload)
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }
}
