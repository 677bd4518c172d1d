import AttributionModel
import Foundation
import HTTPAPI
import Hummingbird
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// `DELETE /v1/admin/devices/{device-identifier}` (or `POST /v1/admin/device-erasures` with
/// `{"device-identifier"}`, for an id a path cannot carry): erases everything the pipeline holds about
/// one device: attribution-winner's pools and re-engagement history, the verifier's view sets, ingest's
/// idempotency records, and every stream entry, dead letter or settling conversion whose message names
/// it (events not yet processed are erased too: that is the point). A message is matched by the device
/// its decoded body names, exactly; a key by its exact name shape (`DeviceKeys`). Postbacks never named
/// the device. Everything about a device is in the device's partition, so only that partition is searched.
struct DeviceErasure {
    let redis: RedisConnection
    let partitioning: Partitioning

    /// Streams whose entries may name a device: the path up to attribution-winner and its dead letters.
    static let streams =
        ConsumerGroups.verifier.streams + ConsumerGroups.attributionWinner.streams + [
            ConsumerGroups.verifier.deadLetterStream, ConsumerGroups.attributionWinner.deadLetterStream,
        ]

    func add(to admin: some RouterMethods<BasicRequestContext>, prefix: String, catalog: RouteCatalog) {
        catalog.on(admin, prefix: prefix, .delete, "/devices/:device") { _, context in
            try await answer(try RequestParameters.deviceIdentifier(pathSegment: try context.parameters.require("device")))
        }
        catalog.on(admin, prefix: prefix, .post, "/device-erasures") { request, _ in
            let body = try await request.decodeJSON(Erasure.self, limit: 4_096)
            return try await answer(try RequestParameters.deviceIdentifier(body.deviceIdentifier))
        }
    }

    struct Erasure: Decodable {
        var deviceIdentifier: String
        enum CodingKeys: String, CodingKey { case deviceIdentifier = "device-identifier" }
    }

    private func answer(_ device: String) async throws -> Response {
        let (keys, entries) = try await erase(device)
        return try JSONAnswer.object(["device-identifier": device, "deleted-keys": keys, "deleted-entries": entries])
    }

    /// Whether a stream entry's or queued message names `device`: its envelope (field `e`, also in a
    /// dead letter) decoded, and the device its body names compared exactly.
    static func names(_ device: String, _ message: [UInt8]) -> Bool {
        (try? Envelope.decode(message))?.body.deviceIdentifier == device
    }

    func erase(_ device: String) async throws -> (keys: Int, entries: Int) {
        let partition = partitioning.of(device: device)
        var keys = 0
        for pattern in DeviceKeys.patterns(device: device, in: partition) {
            var cursor = "0"
            repeat {
                let reply = try await redis.send(RedisCommand("SCAN", cursor, "MATCH", pattern, "COUNT", "1000")).elements
                cursor = reply.first?.string ?? "0"
                let found = (reply.dropFirst().first?.elements ?? []).compactMap(\.string)
                if !found.isEmpty { keys += Int(try await redis.send(RedisCommand(["UNLINK"] + found)).int ?? 0) }
            } while cursor != "0"
        }
        var entries = 0
        for stream in Self.streams.map({ $0(partition) }) {
            try await StreamPages.forEach(stream, on: redis) { page in
                let matching = page.filter { entry in Self.names(device, entry.fields.fieldMap["e"]?.bytes ?? []) }
                if !matching.isEmpty {
                    entries += Int(try await redis.send(RedisCommand(["XDEL", stream] + matching.map(\.id))).int ?? 0)
                }
            }
        }
        // Conversions waiting out their settle time.
        let settling = DelayedQueues.settlingConversions(partition)
        for item in try await settling.items(on: redis) where Self.names(device, item.message) {
            _ = try await redis.pipeline(settling.cancel(id: item.id))
            entries += 1
        }
        return (keys, entries)
    }
}
