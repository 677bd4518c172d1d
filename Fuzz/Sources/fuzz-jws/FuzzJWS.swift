import AttributionCrypto
import AttributionModel
import Foundation
import FuzzSupport

/// One input, every reading of it: a compact JWS, an AdAttributionKit postback body, an impression
/// request as ingest receives it, and base64url text. Thrown errors are refusals and fine; a trap, a
/// failed invariant or a sanitizer report is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    let text = String(decoding: bytes, as: UTF8.self)
    JWSHarness.compact(text, interaction: nil)
    JWSHarness.postbackBody(bytes)
    JWSHarness.impressionRequest(bytes)
    JWSHarness.base64URL(bytes, text: text)
    return 0
}

enum JWSHarness {
    /// `CompactJWS(parsing:)`, the ES256 check, and both payloads a JWS carries.
    static func compact(_ text: String, interaction: Interaction?) {
        guard let jws = try? CompactJWS(parsing: text) else { return }
        try? jws.verify(with: FuzzFixture.privateKey.publicKey)
        // What a receiver decodes once the signature verified (PostbackVerifier.verify).
        _ = try? JSONCoding.decoder.decode(PostbackPayload.self, from: jws.payload)
        // The verifier's own impression path: parse (ES256, the payload, kid = network), then its step.
        FuzzFixture.verify(
            ImpressionReport(
                deviceIdentifier: "fuzz-device", impression: text, interaction: interaction ?? FuzzFixture.click,
                receivedAt: FuzzFixture.receivedAt))
    }

    /// What a postback receiver runs on a body: the `kid` lookup, then the verification by key set or
    /// by one hand-given key (`attribution verify-postback --public-key`).
    static func postbackBody(_ bytes: Data) {
        _ = try? PostbackVerifier.keyID(inBody: bytes)
        _ = try? PostbackVerifier.verifyAny(body: bytes, keys: FuzzFixture.keys)
        _ = try? PostbackBodyVerifier.verify(body: bytes, key: .publicKey(FuzzFixture.skanKey))
    }

    /// `POST /v1/impressions` with an AdAttributionKit JWS: ingest decodes the request, the verifier
    /// parses the JWS and checks it against the reported interaction.
    static func impressionRequest(_ bytes: Data) {
        guard let request = try? JSONDecoder().decode(IngestRequests.Impression.self, from: bytes),
            let jws = request.impression
        else { return }
        compact(jws, interaction: request.interaction)
    }

    /// Round trips that must hold for every input: encoding then decoding gives the bytes back, and
    /// whatever decodes re-encodes to something that decodes the same.
    static func base64URL(_ bytes: Data, text: String) {
        precondition(Base64URL.decode(Base64URL.encode(bytes)) == bytes, "base64url round trip lost bytes")
        if let decoded = Base64URL.decode(text) {
            precondition(Base64URL.decode(Base64URL.encode(decoded)) == decoded, "base64url re-encoding changed bytes")
        }
    }
}
