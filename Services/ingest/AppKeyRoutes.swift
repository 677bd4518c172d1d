import AttributionModel
import Foundation
import Hummingbird
import RedisStreams
import ServiceRuntime

/// An advertised app's keys: issue (`POST …/keys`, the key shown once), list (`GET …/keys`: ids and
/// issue times, never the keys) and revoke (`DELETE …/keys/{key-identifier}`). An app may hold several
/// live keys, so a key is rotated by issuing the new one, moving its backend over, then revoking the
/// old. A key's id is the first 12 hex digits of its SHA-256 (what Redis keeps of it).
struct AppKeyRoutes {
    let redis: RedisConnection
    let clock: @Sendable () -> Milliseconds

    static func identifier(ofHash hash: String) -> String { String(hash.prefix(12)) }

    func add(to admin: some RouterMethods<BasicRequestContext>, prefix: String, catalog: RouteCatalog) {
        catalog.on(admin, prefix: prefix, .post, "/advertised-apps/:item/keys") { _, context in
            let item = try AdminRoutes.itemIdentifier(context)
            guard try await redis.send(RedisCommand("HEXISTS", RegistryKeys.advertisedApps, String(item))).int == 1 else {
                throw ProblemDetails(.notFound, reason: .unknownAdvertisedApp, detail: "register advertised app \(item) first")
            }
            // Shown once: only its hash is stored.
            let key = AppKeys.generate()
            let hash = AppKeys.hash(key)
            let issuedAt = clock()
            _ = try await redis.pipeline([
                RedisCommand("HSET", RegistryKeys.appKeys, hash, String(item)),
                RedisCommand("HSET", RegistryKeys.appKeysIssued, hash, String(issuedAt)),
            ])
            let answer: [String: Any] = [
                "app-key": key, "advertised-item-identifier": String(item), "key-identifier": Self.identifier(ofHash: hash),
                "issued-at": issuedAt,
            ]
            return try AdminRoutes.json(object: answer, status: .created)
        }
        catalog.on(admin, prefix: prefix, .get, "/advertised-apps/:item/keys") { _, context in
            let item = try AdminRoutes.itemIdentifier(context)
            let keys = try await hashes(of: item)
            let issued = try await issueTimes(keys)
            let listed: [[String: Any]] = zip(keys, issued).map { hash, time in
                ["key-identifier": Self.identifier(ofHash: hash)].merging(time.map { ["issued-at": $0] } ?? [:]) { $1 }
            }
            return try AdminRoutes.json(object: ["advertised-item-identifier": String(item), "keys": listed])
        }
        catalog.on(admin, prefix: prefix, .delete, "/advertised-apps/:item/keys/:key") { _, context in
            let item = try AdminRoutes.itemIdentifier(context)
            let id = try context.parameters.require("key")
            guard let hash = try await hashes(of: item).first(where: { Self.identifier(ofHash: $0) == id }) else {
                throw ProblemDetails(
                    .notFound, reason: .unknownAppKey, detail: "advertised app \(item) has no key \(id.prefix(40))")
            }
            _ = try await redis.pipeline([
                RedisCommand("HDEL", RegistryKeys.appKeys, hash), RedisCommand("HDEL", RegistryKeys.appKeysIssued, hash),
            ])
            return try AdminRoutes.json(
                object: ["advertised-item-identifier": String(item), "key-identifier": id, "revoked": true])
        }
    }

    /// The hashes of `item`'s live keys, oldest issue first where known (a walk of the whole key hash:
    /// an admin call, not an event's).
    func hashes(of item: ItemIdentifier) async throws -> [String] {
        var found: [String] = []
        var cursor = "0"
        repeat {
            let reply = try await redis.send(RedisCommand("HSCAN", RegistryKeys.appKeys, cursor, "COUNT", "1000")).elements
            cursor = reply.first?.string ?? "0"
            let pairs = (reply.dropFirst().first?.elements ?? []).compactMap(\.string)
            for index in stride(from: 0, to: pairs.count - 1, by: 2) where pairs[index + 1] == String(item) {
                found.append(pairs[index])
            }
        } while cursor != "0"
        return found.sorted()
    }

    /// When each key was issued (nil for keys issued before this was recorded).
    func issueTimes(_ hashes: [String]) async throws -> [Milliseconds?] {
        guard !hashes.isEmpty else { return [] }
        let reply = try await redis.send(RedisCommand(["HMGET", RegistryKeys.appKeysIssued] + hashes))
        return reply.elements.map { $0.string.flatMap { Milliseconds($0) } }
    }
}
