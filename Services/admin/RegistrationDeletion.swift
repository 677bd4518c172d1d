import AttributionModel
import Foundation
import HTTPAPI
import Hummingbird
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// Deleting an ad network, a publisher app or an advertised app: its registration and everything kept
/// for it alone (credentials, app keys, refusal lists, schemas) in one pipeline, then the registry
/// version bumped so every stage's cache drops it from its next batch. What happens to in-flight work
/// is the stages' ordinary rule for an unregistered id (docs/architecture.md, "Deleting a
/// registration"): events not yet verified are refused; verified impressions and conversions stay;
/// postbacks and copies still due for a deleted network or app are dead-lettered, replayable if it is
/// registered again.
struct RegistrationDeletion {
    let redis: RedisConnection

    func add(to admin: some RouterMethods<BasicRequestContext>, prefix: String, catalog: RouteCatalog) {
        catalog.on(admin, prefix: prefix, .delete, "/ad-networks/:id") { _, context in
            let id = try PathParameters.adNetwork(context).rawValue
            try await requireRegistered(RegistryKeys.adNetworks, id, .unknownAdNetwork, "ad network \(id)")
            let revoking = try await IssuedSecrets.networkCredentials(redis).revokingAll(of: id)
            try await delete(
                [
                    RedisCommand("HDEL", RegistryKeys.adNetworks, id),
                    RedisCommand("DEL", RejectionLog.networkKey(id), RejectionLog.unsignedKey(id)),
                    RedisCommand("HDEL", RejectionLog.unsignedCounts, id),
                ] + revoking)
            return try JSONAnswer.object(["ad-network-identifier": id, "deleted": true])
        }
        catalog.on(admin, prefix: prefix, .delete, "/publisher-apps/:item") { _, context in
            let item = String(try PathParameters.item(context))
            try await requireRegistered(RegistryKeys.publisherApps, item, .unknownPublisherApp, "publisher app \(item)")
            try await delete([RedisCommand("HDEL", RegistryKeys.publisherApps, item)])
            return try JSONAnswer.object(["item-identifier": item, "deleted": true])
        }
        catalog.on(admin, prefix: prefix, .delete, "/advertised-apps/:item") { _, context in
            let app = try PathParameters.item(context)
            let item = String(app)
            try await requireRegistered(RegistryKeys.advertisedApps, item, .unknownAdvertisedApp, "advertised app \(item)")
            let revoking = try await IssuedSecrets.appKeys(redis).revokingAll(of: item)
            // Every version of its conversion-value schema, and the counter, so a new registration starts at 1.
            let latest =
                try await redis.send(
                    RedisCommand("HGET", RegistryKeys.schemaVersions, RegistryKeys.latestSchemaVersionField(app: app))
                )
                .string.flatMap { Int($0) } ?? 0
            let versions = (0...max(latest, 0)).map { version in
                version == 0
                    ? RegistryKeys.latestSchemaVersionField(app: app)
                    : RegistryKeys.schemaVersionField(app: app, version: version)
            }
            try await delete(
                [
                    RedisCommand("HDEL", RegistryKeys.advertisedApps, item),
                    RedisCommand("HDEL", RegistryKeys.currentSchemas, item),
                    RedisCommand(["HDEL", RegistryKeys.schemaVersions] + versions),
                    RedisCommand("DEL", RejectionLog.appKey(item)),
                ] + revoking)
            return try JSONAnswer.object(["advertised-item-identifier": item, "deleted": true])
        }
    }

    private func requireRegistered(_ hash: String, _ field: String, _ reason: ProblemReason, _ what: String) async throws {
        guard try await redis.send(RedisCommand("HEXISTS", hash, field)).int == 1 else {
            throw ProblemDetails(.notFound, reason: reason, detail: "\(what) is not registered")
        }
    }

    private func delete(_ commands: [RedisCommand]) async throws {
        _ = try await redis.pipeline(commands + [RegistryCache.bump])
    }
}
