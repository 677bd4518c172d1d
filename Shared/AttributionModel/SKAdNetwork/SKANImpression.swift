import Foundation

/// A SKAdNetwork 4.0 impression as an ad network signs it. It competes in the same pool as
/// AdAttributionKit impressions (spec §2–3), so it converts to the pool's common shape.
///
/// The signature is ECDSA P-256 with SHA-256 over `signedMessage`, DER, base64 with the standard
/// alphabet [Generating the signature to validate StoreKit-rendered ads].
public struct SKANImpression: Codable, Sendable, Hashable {
    /// `"4.0"`: the only SKAdNetwork impression version the pool accepts.
    public var version: String
    public var adNetworkIdentifier: AdNetworkIdentifier
    /// The hierarchical source identifier, 0–9999 (it replaces 3.0's `campaign-id`).
    public var sourceIdentifier: Int
    /// The advertised app.
    public var itunesItemIdentifier: ItemIdentifier
    /// A lowercase UUID: Apple signs the lowercase text, so an uppercase nonce never verifies.
    public var nonce: String
    /// The app showing the ad; 0 in development (a development impression, as AAK's publisher 0).
    public var sourceAppIdentifier: ItemIdentifier
    /// 1 = StoreKit-rendered ad (a click), 0 = view-through ad (a view).
    public var fidelityType: Int
    /// Milliseconds since 1970.
    public var timestamp: Milliseconds
    /// DER ECDSA signature, base64 (standard alphabet, padded).
    public var signature: String

    public init(
        version: String = SKANImpression.supportedVersion, adNetworkIdentifier: AdNetworkIdentifier, sourceIdentifier: Int,
        itunesItemIdentifier: ItemIdentifier, nonce: String, sourceAppIdentifier: ItemIdentifier, fidelityType: Int,
        timestamp: Milliseconds, signature: String = ""
    ) {
        self.version = version
        self.adNetworkIdentifier = adNetworkIdentifier
        self.sourceIdentifier = sourceIdentifier
        self.itunesItemIdentifier = itunesItemIdentifier
        self.nonce = nonce
        self.sourceAppIdentifier = sourceAppIdentifier
        self.fidelityType = fidelityType
        self.timestamp = timestamp
        self.signature = signature
    }

    public static let supportedVersion = "4.0"
    public static let storeKitRendered = 1
    public static let viewThrough = 0

    /// What the ad network signs: version, ad-network-id, source-identifier, itunes-item-id, nonce,
    /// source-app-id, fidelity-type, timestamp, joined by U+2063, in exactly that order.
    public var signedMessage: String {
        SKANSignedMessage.join([
            version, adNetworkIdentifier.rawValue, String(sourceIdentifier), String(itunesItemIdentifier), nonce,
            String(sourceAppIdentifier), String(fidelityType), String(timestamp),
        ])
    }

    /// Fidelity 1 counts as a click and 0 as a view when the pool ranks impressions (click beats view).
    public var interactionType: InteractionType { fidelityType == Self.storeKitRendered ? .click : .view }

    /// Source app 0 marks a development impression, which any production impression beats.
    public var isDevelopment: Bool { sourceAppIdentifier == 0 }

    /// The pool's common shape: the nonce is the impression id (the replay key), the advertised app
    /// is `itunes-item-id` and the publisher is `source-app-id`.
    public func impressionPayload() -> ImpressionPayload {
        ImpressionPayload(
            impressionIdentifier: nonce, adNetworkIdentifier: adNetworkIdentifier,
            advertisedItemIdentifier: itunesItemIdentifier, publisherItemIdentifier: sourceAppIdentifier,
            sourceIdentifier: sourceIdentifier, timestamp: timestamp)
    }

    /// Throws the first field that makes the impression unusable, before any signature is checked.
    public func validate() throws(SKANFieldProblem) {
        guard version == Self.supportedVersion else {
            throw SKANFieldProblem(key: "version", "must be \(Self.supportedVersion), not \(version)")
        }
        guard SourceIdentifier.range.contains(sourceIdentifier) else {
            throw SKANFieldProblem(key: "source-identifier", "must be within 0–9999, not \(sourceIdentifier)")
        }
        guard UUID(uuidString: nonce) != nil, nonce == nonce.lowercased() else {
            throw SKANFieldProblem(key: "nonce", "must be a lowercase UUID, not \(nonce)")
        }
        guard fidelityType == Self.storeKitRendered || fidelityType == Self.viewThrough else {
            throw SKANFieldProblem(key: "fidelity-type", "must be 1 (StoreKit-rendered) or 0 (view-through), not \(fidelityType)")
        }
        guard !signature.isEmpty else { throw SKANFieldProblem(key: "signature", "is empty") }
        // A DER ECDSA P-256 signature is at most 72 bytes, 96 in base64: anything far longer is not one,
        // and would be carried (and kept) through the pipeline before the verifier refused it.
        guard signature.utf8.count <= Self.maximumSignatureLength else {
            throw SKANFieldProblem(
                key: "signature", "is \(signature.utf8.count) characters; at most \(Self.maximumSignatureLength)")
        }
    }

    /// The longest `signature` ingest accepts (a base64 DER P-256 signature is at most 96 characters).
    public static let maximumSignatureLength = 256

    enum CodingKeys: String, CodingKey {
        case version
        case adNetworkIdentifier = "ad-network-id"
        case sourceIdentifier = "source-identifier"
        case itunesItemIdentifier = "itunes-item-id"
        case nonce
        case sourceAppIdentifier = "source-app-id"
        case fidelityType = "fidelity-type"
        case timestamp
        case signature
    }
}
