import AttributionCrypto
import AttributionModel
import Foundation
import Hummingbird
import ServiceRuntime

/// The four event routes, and how one body (or one batch item) of each becomes an event to publish:
/// decoded once, validated by the model, wrapped in its envelope.
enum EventKind: String, CaseIterable, Sendable {
    case impressions
    case conversions
    case updates = "conversion-value-updates"
    case activity

    var path: String { "/v1/\(rawValue)" }
    var batchPath: String { path + "/batch" }

    /// The kind whose single or batch route `requestPath` (a request's path, query and all) names.
    init?(requestPath: String) {
        let path = requestPath.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard let kind = Self.allCases.first(where: { path == $0.path || path == $0.batchPath }) else { return nil }
        self = kind
    }

    /// The name in idempotency records and keyed event ids: the route's last path component.
    var route: String { rawValue }
    /// Conversions, updates and activity carry the advertised app's key.
    var needsAppKey: Bool { self != .impressions }

    /// One decoded event, and who sent it for the per-caller rate (nil unless `withCaller`).
    struct Decoded {
        var event: EventPublisher.Prepared
        var caller: String?
        /// A re-engagement's `reengagement-url`, checked: the answer opens it with the conversion tag.
        var reengagementURL: URLComponents? = nil
    }

    /// Decodes and validates `bytes`: a whole request body (`idempotencyKey` from its header), or a batch
    /// item (`inBatch`: its own `idempotency-key` member wins over `idempotencyKey`).
    func decode(
        _ bytes: Data, appKey: String?, idempotencyKey: String?, inBatch: Bool, receivedAt: Milliseconds, withCaller: Bool
    ) throws -> Decoded {
        // Only a keyed event is ever compared with a retry, and only its id follows from the request.
        func identity(_ key: String?) -> EventPublisher.Identity {
            key.map { .keyed(route: route, key: $0, bytes: bytes) } ?? .unkeyed()
        }
        func prepared(
            _ envelope: Envelope, _ identity: EventPublisher.Identity, device: String, caller: EventPublisher.Caller,
            key: String?, tagged: Bool = false
        ) throws -> EventPublisher.Prepared {
            if let key { try RequestChecks.idempotencyKey(key) }
            return EventPublisher.Prepared(
                envelope: envelope, route: route, device: device, caller: caller, idempotencyKey: key,
                fingerprint: identity.fingerprint, tagged: tagged)
        }
        switch self {
        case .impressions:
            let (request, key) = try Self.decode(IngestRequests.Impression.self, bytes, inBatch: inBatch, idempotencyKey)
            let report = try request.report(receivedAt: receivedAt)
            let identity = identity(key)
            let event = try prepared(
                Envelope(id: identity.id, time: report.interaction.time, body: .impressionReported(report)), identity,
                device: report.deviceIdentifier,
                caller: .signedImpression(network: key == nil ? "-" : Self.claimedNetworkIdentifier(request)), key: key)
            return Decoded(event: event, caller: withCaller ? "network \(Self.claimedNetworkIdentifier(request))" : nil)
        case .conversions:
            let (request, key) = try Self.decode(IngestRequests.Conversion.self, bytes, inBatch: inBatch, idempotencyKey)
            // A re-engagement's tag is its event id: known here, so it goes back in the answer.
            let identity = identity(key)
            let report = try request.report(receivedAt: receivedAt, conversionTag: identity.id)
            let event = try prepared(
                Envelope(id: identity.id, time: report.time, body: .conversionReported(report)), identity,
                device: report.deviceIdentifier,
                caller: .app(key: appKey, item: report.advertisedItemIdentifier), key: key,
                tagged: report.conversionType == .reengagement)
            return Decoded(
                event: event, caller: withCaller ? "app \(report.advertisedItemIdentifier)" : nil,
                reengagementURL: try request.reengagementURL.map { url throws(RequestProblem) in
                    try ReengagementOpenURL.validate(url)
                })
        case .updates:
            let (request, key) = try Self.decode(IngestRequests.ValueUpdate.self, bytes, inBatch: inBatch, idempotencyKey)
            let report = try request.report(receivedAt: receivedAt)
            let identity = identity(key)
            let event = try prepared(
                Envelope(id: identity.id, time: report.time, body: .updateReported(report)), identity,
                device: report.deviceIdentifier,
                caller: .app(key: appKey, item: report.advertisedItemIdentifier), key: key)
            return Decoded(event: event, caller: withCaller ? "app \(report.advertisedItemIdentifier)" : nil)
        case .activity:
            let (request, key) = try Self.decode(
                IngestRequests.ActivityReportRequest.self, bytes, inBatch: inBatch, idempotencyKey)
            let report = try request.report(receivedAt: receivedAt)
            let identity = identity(key)
            let event = try prepared(
                Envelope(id: identity.id, time: report.time, body: .activityReported(report)), identity,
                device: report.deviceIdentifier,
                caller: .app(key: appKey, item: report.advertisedItemIdentifier), key: key)
            return Decoded(event: event, caller: withCaller ? "app \(report.advertisedItemIdentifier)" : nil)
        }
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ bytes: Data, inBatch: Bool, _ key: String?) throws -> (
        T, String?
    ) {
        guard inBatch else { return (try Request.decodeEventJSON(T.self, from: bytes), key) }
        let item = try Request.decodeEventJSON(BatchItem<T>.self, from: bytes)
        return (item.event, item.idempotencyKey ?? key)
    }

    /// The ad network an impression claims (JWS `kid`, or SKAdNetwork `ad-network-id`): unverified here
    /// (the verifier checks it), so it only keys the per-caller rate and scopes idempotency records (a
    /// false claim fails verification; at most it shares the records of the network it names).
    static func claimedNetworkIdentifier(_ request: IngestRequests.Impression) -> String {
        if let skan = request.skadnetworkImpression { return skan.adNetworkIdentifier.rawValue }
        let header = request.impression?.split(separator: ".", maxSplits: 1).first
        let kid = header.flatMap { Base64URL.decode($0) }.flatMap { try? PlainJSON.decode(JWSHeader.self, from: $0) }?.kid
        return kid ?? "-"
    }
}
