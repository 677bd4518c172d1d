import AttributionModel
import Foundation
import Hummingbird
import RedisStreams
import ServiceRuntime

/// The event API: each accepted event is on `events` (Redis, AOF) before the 202 goes out, so nothing
/// acknowledged is lost. Impressions authenticate by their signature (the verifier's check);
/// conversions and updates by the advertised app's key.
struct EventRoutes {
    let redis: RedisConnection
    let maxBodyBytes: Int
    /// How long a key no dispatcher signs with any more stays in the JWKS.
    let signingKeyGrace: Milliseconds
    let partitioning: Partitioning
    let durability: EventPublisher.Durability
    let clock: @Sendable () -> Milliseconds
    var publisher: EventPublisher { EventPublisher(redis: redis, partitioning: partitioning, durability: durability) }

    struct Accepted: Encodable {
        let eventIdentifier: String
        /// Re-engagements: the `AdAttributionKitReengagementOpen` value updates may carry.
        var conversionTag: String? = nil
        enum CodingKeys: String, CodingKey {
            case eventIdentifier = "event-identifier"
            case conversionTag = "conversion-tag"
        }
    }

    func add(to router: Router<BasicRequestContext>, catalog: RouteCatalog) {
        catalog.on(router, .post, "/v1/impressions") { request, _ in
            let body = try await request.collectBody(limit: maxBodyBytes)
            let report = try Request.decodeJSON(IngestRequests.Impression.self, from: body)
                .report(receivedAt: clock())
            let envelope = Envelope(time: report.interaction.time, body: .impressionReported(report))
            return try await accept(
                envelope, request, route: "impressions", device: report.deviceIdentifier, caller: .signedImpression, body: body)
        }
        catalog.on(router, .post, "/v1/conversions") { request, _ in
            try Self.requireAppKey(request)
            let body = try await request.collectBody(limit: maxBodyBytes)
            // A re-engagement's tag is its event id: known here, so it goes back in the 202.
            let id = UUID().uuidString.lowercased()
            let report = try Request.decodeJSON(IngestRequests.Conversion.self, from: body)
                .report(receivedAt: clock(), conversionTag: id)
            let envelope = Envelope(id: id, time: report.time, body: .conversionReported(report))
            let caller = EventPublisher.Caller.app(key: request.bearerToken, item: report.advertisedItemIdentifier)
            return try await accept(
                envelope, request, route: "conversions", device: report.deviceIdentifier, caller: caller,
                body: body,
                tagged: report.conversionType == .reengagement)
        }
        catalog.on(router, .post, "/v1/conversion-value-updates") { request, _ in
            try Self.requireAppKey(request)
            let body = try await request.collectBody(limit: maxBodyBytes)
            let report = try Request.decodeJSON(IngestRequests.ValueUpdate.self, from: body)
                .report(receivedAt: clock())
            let envelope = Envelope(time: report.time, body: .updateReported(report))
            let caller = EventPublisher.Caller.app(key: request.bearerToken, item: report.advertisedItemIdentifier)
            return try await accept(
                envelope, request, route: "updates", device: report.deviceIdentifier, caller: caller, body: body)
        }
        catalog.on(router, .post, "/v1/activity") { request, _ in
            try Self.requireAppKey(request)
            let body = try await request.collectBody(limit: maxBodyBytes)
            let report = try Request.decodeJSON(IngestRequests.ActivityReportRequest.self, from: body)
                .report(receivedAt: clock())
            let envelope = Envelope(time: report.time, body: .activityReported(report))
            let caller = EventPublisher.Caller.app(key: request.bearerToken, item: report.advertisedItemIdentifier)
            return try await accept(
                envelope, request, route: "activity", device: report.deviceIdentifier, caller: caller, body: body)
        }
        SchemaRoutes(redis: redis, maxBodyBytes: maxBodyBytes, publisher: publisher).addPublic(to: router, catalog: catalog)
        catalog.on(router, .get, "/.well-known/jwks.json") { _, _ -> Response in
            // The dispatchers publish their public keys and say which they still sign with; ingest
            // serves those, and retired ones until their grace ends.
            let replies = try await redis.pipeline([
                RedisCommand("HGETALL", RegistryKeys.jwks), RedisCommand("HGETALL", RegistryKeys.jwksSeen),
            ])
            let keys = KeySetPublication.served(
                published: replies[0].fieldMap.compactMapValues(\.string),
                lastSigned: replies[1].fieldMap.compactMapValues { $0.string.flatMap { Milliseconds($0) } }, now: clock(),
                grace: signingKeyGrace
            ).joined(separator: ",")
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            headers[.cacheControl] = "max-age=60"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: "{\"keys\":[\(keys)]}")))
        }
    }

    /// Unauthenticated callers learn nothing about bodies: no key, no parsing.
    static func requireAppKey(_ request: Request) throws {
        guard let key = request.bearerToken, !key.isEmpty else {
            throw ProblemDetails(
                .unauthorized, reason: .missingAppKey,
                detail: "conversions and updates need the app's key: Authorization: Bearer <app key>")
        }
    }

    private func accept(
        _ envelope: Envelope, _ request: Request, route: String, device: String, caller: EventPublisher.Caller, body: Data,
        tagged: Bool = false
    ) async throws -> Response {
        let id = try await publisher.publish(
            envelope, route: route, device: device, caller: caller, idempotencyKey: request.idempotencyKey,
            body: body)
        return Response.json(Accepted(eventIdentifier: id, conversionTag: tagged ? id : nil), status: .accepted)
    }
}

extension Request {
    /// The `Idempotency-Key` header (RFC draft: a retry with the same key gets the first answer).
    var idempotencyKey: String? {
        headers.first { $0.name.canonicalName == "idempotency-key" }?.value
    }

    /// The token of an `Authorization: Bearer …` header.
    var bearerToken: String? {
        guard let header = headers[.authorization], header.hasPrefix("Bearer ") else { return nil }
        return String(header.dropFirst(7))
    }
}
