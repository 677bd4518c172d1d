import AttributionModel
import Foundation
import Hummingbird
import RedisStreams
import ServiceRuntime

/// Conversion-value schemas: the admin API uploads a new version (the previous ones are kept, and a
/// conversion keeps the version in force when it was attributed); SDKs report activity, or ask for
/// the value they would report next (`evaluate`, read-only).
struct SchemaRoutes {
    let redis: RedisConnection
    let maxBodyBytes: Int
    let appKeys: AppKeyOwners

    func addAdmin(to admin: some RouterMethods<BasicRequestContext>, prefix: String, catalog: RouteCatalog) {
        catalog.on(admin, prefix: prefix, .put, "/advertised-apps/:item/conversion-value-schema") { request, context in
            let item = try AdminRoutes.itemIdentifier(context)
            guard try await redis.send(RedisCommand("HEXISTS", RegistryKeys.advertisedApps, String(item))).int == 1 else {
                throw ProblemDetails(.notFound, reason: .unknownAdvertisedApp, detail: "register advertised app \(item) first")
            }
            let body = try await request.collectBody(limit: 262_144)
            var schema = try Request.decodeJSON(ConversionValueSchema.self, from: body)
            // A misspelt condition (`sesions`) would make its rule hold for every device.
            if let unknown = UnknownMembers.paths(inJSON: body, comparedWith: schema).first {
                throw ProblemDetails.badRequest(.unknownKey, "\(unknown) is not a member of a conversion-value schema")
            }
            try schema.validate()
            // Versions count per app; the script keeps the counter, the history and the current one in step.
            let version =
                try await redis.send(
                    RedisCommand("HINCRBY", RegistryKeys.schemaVersions, RegistryKeys.latestSchemaVersionField(app: item), "1")
                ).int ?? 1
            schema.version = Int(version)
            let json = try JSONCoding.encoder.encode(schema)
            _ = try await redis.pipeline([
                RedisCommand(bytes: [
                    Array("HSET".utf8), Array(RegistryKeys.schemaVersions.utf8),
                    Array(RegistryKeys.schemaVersionField(app: item, version: Int(version)).utf8), Array(json),
                ]),
                RedisCommand(bytes: [
                    Array("HSET".utf8), Array(RegistryKeys.currentSchemas.utf8), Array(String(item).utf8), Array(json),
                ]),
                RegistryCache.bump,
            ])
            return AdminRoutes.json(Array(json), status: .created)
        }
        catalog.on(admin, prefix: prefix, .get, "/advertised-apps/:item/conversion-value-schema") { _, context in
            let item = try AdminRoutes.itemIdentifier(context)
            return AdminRoutes.json(try await current(item), status: .ok)
        }
        catalog.on(admin, prefix: prefix, .get, "/advertised-apps/:item/conversion-value-schema/:version") { _, context in
            let item = try AdminRoutes.itemIdentifier(context)
            let version = try RequestParameters.schemaVersion(try context.parameters.require("version"))
            return AdminRoutes.json(try await stored(item, version: version), status: .ok)
        }
    }

    func addPublic(to router: Router<BasicRequestContext>, catalog: RouteCatalog) {
        catalog.on(router, .post, "/v1/conversion-values/evaluate") { request, _ in
            try EventRoutes.requireAppKey(request)
            let input = try Request.decodeJSON(
                IngestRequests.EvaluationRequest.self, from: try await request.collectBody(limit: maxBodyBytes))
            let owner = try await appKeys.owner(of: request.bearerToken ?? "")
            if let refusal = AppKeyOwners.refusal(owner: owner, item: input.advertisedItemIdentifier) { throw refusal }
            try input.validate()
            let item = input.advertisedItemIdentifier
            let json =
                if let version = input.version { try await stored(item, version: version) } else { try await current(item) }
            let schema = try JSONCoding.decoder.decode(ConversionValueSchema.self, from: Data(json))
            let evaluation = schema.evaluate(window: input.window, totals: input.totals, previous: input.previous)
            var reply: [String: Any] = ["version": schema.version ?? 0, "changed": evaluation.changed]
            if let value = evaluation.value {
                reply["fineConversionValue"] = value.fine
                reply["coarseConversionValue"] = value.coarse.rawValue
                reply["lockPostback"] = value.lock
            }
            return try AdminRoutes.json(object: reply)
        }
    }

    func current(_ item: ItemIdentifier) async throws -> [UInt8] {
        guard let json = try await redis.send(RedisCommand("HGET", RegistryKeys.currentSchemas, String(item))).bytes else {
            throw ProblemDetails(.notFound, reason: .noSchema, detail: "advertised app \(item) has no conversion-value schema")
        }
        return json
    }

    func stored(_ item: ItemIdentifier, version: Int) async throws -> [UInt8] {
        guard
            let json = try await redis.send(
                RedisCommand("HGET", RegistryKeys.schemaVersions, RegistryKeys.schemaVersionField(app: item, version: version))
            ).bytes
        else {
            throw ProblemDetails(
                .notFound, reason: .unknownSchemaVersion, detail: "advertised app \(item) has no schema version \(version)")
        }
        return json
    }
}
