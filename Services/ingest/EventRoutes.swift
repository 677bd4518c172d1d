import AttributionModel
import Hummingbird
import RedisStreams
import ServiceRuntime

/// The event API: each accepted event is one XADD to `events`, then 202 with its id. A 202 means
/// the event is in Redis (AOF), so nothing acknowledged is lost.
struct EventRoutes {
    let redis: RedisConnection
    let maxBodyBytes: Int

    struct Accepted: Encodable {
        let eventIdentifier: String
        enum CodingKeys: String, CodingKey { case eventIdentifier = "event-identifier" }
    }

    func add(to router: Router<BasicRequestContext>) {
        router.post("/v1/impressions") { request, _ in
            let report = try await request.decodeJSON(IngestRequests.Impression.self, limit: maxBodyBytes)
                .report(receivedAt: WallClock.nowMilliseconds())
            return try await publish(Envelope(time: report.interaction.time, body: .impressionReported(report)))
        }
        router.post("/v1/conversions") { request, _ in
            let report = try await request.decodeJSON(IngestRequests.Conversion.self, limit: maxBodyBytes)
                .report(receivedAt: WallClock.nowMilliseconds())
            return try await publish(Envelope(time: report.time, body: .conversionReported(report)))
        }
        router.post("/v1/conversion-value-updates") { request, _ in
            let report = try await request.decodeJSON(IngestRequests.ValueUpdate.self, limit: maxBodyBytes)
                .report(receivedAt: WallClock.nowMilliseconds())
            return try await publish(Envelope(time: report.time, body: .updateReported(report)))
        }
        router.get("/.well-known/jwks.json") { _, _ -> Response in
            // The dispatcher publishes its public keys; ingest only serves them.
            let reply = try await redis.send(RedisCommand("HVALS", RegistryKeys.jwks))
            let keys = reply.elements.compactMap { $0.string }.sorted().joined(separator: ",")
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            headers[.cacheControl] = "max-age=60"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: "{\"keys\":[\(keys)]}")))
        }
    }

    private func publish(_ envelope: Envelope) async throws -> Response {
        _ = try await redis.send(StreamCommands.add(StreamNames.events, message: envelope.encoded()))
        return Response.json(Accepted(eventIdentifier: envelope.id), status: .accepted)
    }
}
