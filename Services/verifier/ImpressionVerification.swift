import AttributionCrypto
import AttributionModel
import Foundation

/// Every check an impression must pass, in the order that gives the most useful reason first:
/// form, algorithm, key id, registration, signature, payload rules, publisher listing.
enum ImpressionVerification {
    struct Refusal: Error {
        let reason: RejectionReason
        let detail: String
        var adNetworkIdentifier: String?
        var impressionIdentifier: String?
    }

    /// What the batch needs before the registry is read: the impression in the pool's common shape
    /// and the signature still to check.
    struct Parsed: Sendable {
        enum Signature: Sendable {
            case jws(CompactJWS)
            case skadnetwork(SKANImpression)
        }
        let signature: Signature
        let payload: ImpressionPayload
        var kind: ImpressionKind {
            if case .skadnetwork = signature { return .skAdNetwork }
            return .adAttributionKit
        }
    }

    static func parse(_ report: ImpressionReport) throws(Refusal) -> Parsed {
        if let skan = report.skadnetworkImpression {
            do { try skan.validate() } catch { throw Refusal(reason: .invalidPayload, detail: "\(error)") }
            return Parsed(signature: .skadnetwork(skan), payload: skan.impressionPayload())
        }
        let jws: CompactJWS
        do { jws = try CompactJWS(parsing: report.impression ?? "") } catch {
            throw Refusal(reason: RejectionReason(error.code), detail: error.reason)
        }
        guard jws.header.alg == "ES256" else {
            throw Refusal(reason: .unsupportedAlgorithm, detail: "alg must be ES256, not \(jws.header.alg)")
        }
        guard let payload = try? JSONCoding.decoder.decode(ImpressionPayload.self, from: jws.payload) else {
            throw Refusal(reason: .invalidPayload, detail: "payload is not an impression with the spec's keys and types")
        }
        guard jws.header.kid == payload.adNetworkIdentifier.rawValue else {
            throw Refusal(
                reason: .keyIdentifierMismatch, detail: "header kid must equal ad-network-identifier",
                adNetworkIdentifier: payload.adNetworkIdentifier.rawValue,
                impressionIdentifier: payload.impressionIdentifier)
        }
        return Parsed(signature: .jws(jws), payload: payload)
    }

    static func verify(
        _ parsed: Parsed, report: ImpressionReport, registry: RegistrySnapshot, policy: TimePolicy
    ) throws(Refusal) {
        let payload = parsed.payload
        func refuse(_ reason: RejectionReason, _ detail: String) -> Refusal {
            Refusal(
                reason: reason, detail: detail, adNetworkIdentifier: payload.adNetworkIdentifier.rawValue,
                impressionIdentifier: payload.impressionIdentifier)
        }
        guard let network = registry.adNetworks[payload.adNetworkIdentifier.rawValue] else {
            throw refuse(.unknownAdNetwork, "ad network \(payload.adNetworkIdentifier) is not registered")
        }
        switch parsed.signature {
        case .jws(let jws):
            // After a rotation the previous key stays valid for its grace period.
            var failure: JWSError?
            for key in network.acceptedKeys(at: report.receivedAt) {
                do {
                    try jws.verify(with: try PublicKeyCache.shared.key(key))
                    failure = nil
                    break
                } catch {
                    failure = failure ?? error
                }
            }
            if let failure { throw refuse(RejectionReason(failure.code), failure.reason) }
        case .skadnetwork(let skan):
            guard let text = network.skanPublicKey else {
                throw refuse(.unknownAdNetwork, "ad network \(payload.adNetworkIdentifier) registered no SKAdNetwork key")
            }
            do {
                try skan.verifySignature(with: try SKANPublicKey(parsing: text))
            } catch {
                throw refuse(RejectionReason(error.code), error.reason)
            }
        }
        if let (reason, detail) = ImpressionRules.check(
            payload, interaction: report.interaction, receivedAt: report.receivedAt, policy: policy)
        {
            throw refuse(reason, detail)
        }
        guard registry.advertisedApps[payload.advertisedItemIdentifier] != nil else {
            throw refuse(.unknownAdvertisedApp, "advertised app \(payload.advertisedItemIdentifier) is not registered")
        }
        // Development impressions (publisher 0) come from no registered publisher app.
        if !payload.isDevelopment {
            guard let publisher = registry.publisherApps[payload.publisherItemIdentifier],
                publisher.adNetworkIdentifiers.contains(payload.adNetworkIdentifier)
            else {
                throw refuse(
                    .publisherNotListingNetwork,
                    "publisher app \(payload.publisherItemIdentifier) does not list \(payload.adNetworkIdentifier) in AdNetworkIdentifiers"
                )
            }
        }
    }
}

extension RejectionReason {
    init(_ code: JWSError.Code) {
        switch code {
        case .invalidComponents: self = .invalidComponents
        case .invalidHeader: self = .invalidHeader
        case .invalidPayload: self = .invalidPayload
        case .invalidSignature, .invalidKey: self = .invalidSignature
        case .unsupportedAlgorithm: self = .unsupportedAlgorithm
        }
    }
}
