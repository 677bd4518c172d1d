import AttributionCrypto
import AttributionModel
import Foundation
import FuzzSupport

/// One input, every SKAdNetwork reading of it: a 4.0 impression (bare, or inside ingest's impression
/// request), a postback of any version, and a public key as an ad network registers it. Thrown errors
/// are refusals and fine; a trap or a sanitizer report is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSKAN(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    SKANHarness.impression(bytes)
    SKANHarness.postback(bytes)
    SKANHarness.publicKey(bytes)
    return 0
}

enum SKANHarness {
    static func impression(_ bytes: Data) {
        if let impression = try? JSONCoding.decoder.decode(SKANImpression.self, from: bytes) {
            check(impression, interaction: nil)
        }
        // `POST /v1/impressions` with `skadnetwork-impression`: ingest's decoder, then the verifier.
        if let request = try? JSONDecoder().decode(IngestRequests.Impression.self, from: bytes),
            let impression = request.skadnetworkImpression
        {
            check(impression, interaction: request.interaction)
        }
    }

    /// The signed message and signature alone, then the verifier's own path (`SignedImpression.parse`:
    /// the fields; `VerifierStep`: signature, then the rules on the common shape).
    static func check(_ impression: SKANImpression, interaction: Interaction?) {
        _ = impression.signedMessage
        try? impression.verifySignature(with: FuzzFixture.skanKey)
        FuzzFixture.verify(
            ImpressionReport(
                deviceIdentifier: "fuzz-device", skadnetworkImpression: impression,
                interaction: interaction ?? FuzzFixture.click, receivedAt: FuzzFixture.receivedAt))
    }

    /// Decoding, the version's field rules and signed message, the common fields, and verification
    /// with Apple's key for the version (P-192 through OpenSSL for 1.0 and 2.0) and by key set.
    static func postback(_ bytes: Data) {
        if let postback = try? SKANPostbackVerifier.decode(bytes) {
            _ = try? postback.validate()
            _ = try? postback.signedMessage()
            _ = postback.commonPayload
            _ = postback.interactionType
            let key = postback.resolvedVersion.map(SKANPublicKey.apple(for:)) ?? .appleP256
            try? SKANPostbackVerifier.verify(postback, publicKey: key)
        }
        _ = try? PostbackVerifier.verifyAny(body: bytes, keys: FuzzFixture.keys)
        _ = try? PostbackBodyVerifier.verify(body: bytes, key: .appleSKAdNetwork)
    }

    /// `skan-public-key` as ingest stores it and the verifier parses it: base64 DER or PEM text, and
    /// the DER itself (a SEQUENCE only: anything else is refused before OpenSSL sees it anyway).
    static func publicKey(_ bytes: Data) {
        _ = try? SKANPublicKey(parsing: String(decoding: bytes, as: UTF8.self))
        if bytes.first == 0x30 {
            _ = try? SKANPublicKey(spkiDER: bytes)
        }
    }
}
