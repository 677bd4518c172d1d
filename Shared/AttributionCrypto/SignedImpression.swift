import AttributionModel

/// An impression report parsed for verification: a compact JWS (ES256, `kid` = ad network) or a
/// SKAdNetwork signed impression, with its payload in the pool's common shape. The model's
/// `VerifierStep` decides everything else; this type only knows the signature formats.
public struct SignedImpression: VerifiableImpression {
    enum Signature: Sendable {
        case jws(CompactJWS)
        case skadnetwork(SKANImpression)
    }
    let signature: Signature
    public let payload: ImpressionPayload

    public var kind: ImpressionKind {
        if case .skadnetwork = signature { return .skAdNetwork }
        return .adAttributionKit
    }

    /// Form, algorithm and key id: the checks that need no registry, in the order that gives the most
    /// useful reason first.
    public static func parse(_ report: ImpressionReport) -> Result<SignedImpression, VerifierStep.Refusal> {
        Result { () throws(VerifierStep.Refusal) in try parsing(report) }
    }

    static func parsing(_ report: ImpressionReport) throws(VerifierStep.Refusal) -> SignedImpression {
        if let skan = report.skadnetworkImpression {
            do { try skan.validate() } catch { throw VerifierStep.Refusal(reason: .invalidPayload, detail: "\(error)") }
            return SignedImpression(signature: .skadnetwork(skan), payload: skan.impressionPayload())
        }
        let jws: CompactJWS
        do { jws = try CompactJWS(parsing: report.impression ?? "") } catch {
            throw VerifierStep.Refusal(reason: RejectionReason(error.code), detail: error.reason)
        }
        // The header's kid names the ad network: such a refusal is listed for it if it is registered.
        let kid = jws.header.kid.flatMap { $0.isEmpty ? nil : $0 }
        guard jws.header.alg == "ES256" else {
            throw VerifierStep.Refusal(
                reason: .unsupportedAlgorithm, detail: "alg must be ES256, not \(jws.header.alg)", adNetworkIdentifier: kid)
        }
        guard let payload = try? PlainJSON.decode(ImpressionPayload.self, from: jws.payload) else {
            throw VerifierStep.Refusal(
                reason: .invalidPayload, detail: "payload is not an impression with the spec's keys and types",
                adNetworkIdentifier: kid)
        }
        guard jws.header.kid == payload.adNetworkIdentifier.rawValue else {
            throw VerifierStep.Refusal(
                reason: .keyIdentifierMismatch, detail: "header kid must equal ad-network-identifier",
                adNetworkIdentifier: payload.adNetworkIdentifier.rawValue, impressionIdentifier: payload.impressionIdentifier)
        }
        return SignedImpression(signature: .jws(jws), payload: payload)
    }

    public func signatureProblem(keys: [String]) -> (reason: RejectionReason, detail: String)? {
        switch signature {
        case .jws(let jws):
            var failure: JWSError?
            for key in keys {
                do {
                    try jws.verify(with: try PublicKeyCache.shared.key(key))
                    return nil
                } catch {
                    failure = failure ?? error
                }
            }
            guard let failure else { return (.invalidSignature, "no key to verify the signature with") }
            return (RejectionReason(failure.code), failure.reason)
        case .skadnetwork(let skan):
            do {
                try skan.verifySignature(with: try SKANPublicKey(parsing: keys.first ?? ""))
                return nil
            } catch {
                return (RejectionReason(error.code), error.reason)
            }
        }
    }
}

extension RejectionReason {
    /// The verifier's reason for a JWS that failed to parse or verify.
    public init(_ code: JWSError.Code) {
        switch code {
        case .invalidComponents: self = .invalidComponents
        case .invalidHeader: self = .invalidHeader
        case .invalidPayload: self = .invalidPayload
        case .invalidSignature, .invalidKey: self = .invalidSignature
        case .unsupportedAlgorithm: self = .unsupportedAlgorithm
        }
    }
}
