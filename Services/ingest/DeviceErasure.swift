import AttributionModel
import Foundation
import Hummingbird
import RedisStreams
import ServiceRuntime

/// `DELETE /v1/admin/devices/{device-identifier}`: erases everything the pipeline holds about one
/// device: attribution-winner's pools and re-engagement history, the verifier's view sets, ingest's
/// idempotency records, and every stream entry or settling conversion that still names it (events not
/// yet processed are erased too: that is the point). Postbacks never named the device. Everything
/// about a device is in the device's partition, so only that partition is searched.
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
            let device = try RequestParameters.deviceIdentifier(try context.parameters.require("device"))
            let (keys, entries) = try await erase(device)
            return try AdminRoutes.json(
                object: ["device-identifier": device, "deleted-keys": keys, "deleted-entries": entries])
        }
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
        // Messages spell the identifier as a JSON string value.
        let needle = Array(
            String(decoding: try JSONSerialization.data(withJSONObject: [device]), as: UTF8.self).dropFirst().dropLast().utf8)
        var entries = 0
        for stream in Self.streams.map({ $0(partition) }) {
            try await StreamPages.forEach(stream, on: redis) { page in
                let matching = page.filter { entry in entry.fields.elements.contains { ($0.bytes ?? []).contains(needle) } }
                if !matching.isEmpty {
                    entries += Int(try await redis.send(RedisCommand(["XDEL", stream] + matching.map(\.id))).int ?? 0)
                }
            }
        }
        // Conversions waiting out their settle time.
        let settling = DelayedQueues.settlingConversions(partition)
        for item in try await settling.items(on: redis) where item.message.contains(needle) {
            _ = try await redis.pipeline(settling.cancel(id: item.id))
            entries += 1
        }
        return (keys, entries)
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in these bytes.
    func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return needle.isEmpty }
        return (0...(count - needle.count)).contains { start in self[start..<start + needle.count].elementsEqual(needle) }
    }
}
