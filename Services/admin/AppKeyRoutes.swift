import AttributionModel
import Foundation
import HTTPAPI
import Hummingbird
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// An advertised app's keys: issue (`POST …/keys`, the key shown once), list (`GET …/keys`: ids and
/// issue times, never the keys) and revoke (`DELETE …/keys/{key-identifier}`). An app may hold several
/// live keys, so a key is rotated by issuing the new one, moving its backend over, then revoking the
/// old. A key's id is the first 12 hex digits of its SHA-256 (what Redis keeps of it).
struct AppKeyRoutes {
    let redis: RedisConnection
    let clock: @Sendable () -> Milliseconds

    func add(to admin: some RouterMethods<BasicRequestContext>, prefix: String, catalog: RouteCatalog) {
        let keys = IssuedSecrets.appKeys(redis)
        catalog.on(admin, prefix: prefix, .post, "/advertised-apps/:item/keys") { _, context in
            let item = try PathParameters.item(context)
            guard try await redis.send(RedisCommand("HEXISTS", RegistryKeys.advertisedApps, String(item))).int == 1 else {
                throw ProblemDetails(.notFound, reason: .unknownAdvertisedApp, detail: "register advertised app \(item) first")
            }
            let issuedAt = clock()
            let issued = try await keys.issue(to: String(item), at: issuedAt)
            let answer: [String: Any] = [
                "app-key": issued.secret, "advertised-item-identifier": String(item), "key-identifier": issued.identifier,
                "issued-at": issuedAt,
            ]
            return try JSONAnswer.object(answer, status: .created)
        }
        catalog.on(admin, prefix: prefix, .get, "/advertised-apps/:item/keys") { _, context in
            let item = try PathParameters.item(context)
            let listed = try await keys.list(of: String(item), identifierKey: "key-identifier")
            return try JSONAnswer.object(["advertised-item-identifier": String(item), "keys": listed])
        }
        catalog.on(admin, prefix: prefix, .delete, "/advertised-apps/:item/keys/:key") { _, context in
            let item = try PathParameters.item(context)
            let id = try context.parameters.require("key")
            guard try await keys.revoke(id, of: String(item)) else {
                throw ProblemDetails(
                    .notFound, reason: .unknownAppKey, detail: "advertised app \(item) has no key \(id.prefix(40))")
            }
            return try JSONAnswer.object(
                ["advertised-item-identifier": String(item), "key-identifier": id, "revoked": true])
        }
    }
}
