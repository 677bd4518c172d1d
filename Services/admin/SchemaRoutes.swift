import AttributionModel
import Foundation
import HTTPAPI
import Hummingbird
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// Conversion-value schemas on the admin API: an upload is a new version (the previous ones are kept,
/// and a conversion keeps the version in force when it was attributed); the current one and any
/// earlier version read back as stored.
struct SchemaRoutes {
    let redis: RedisConnection

    var schemas: ValueSchemas { ValueSchemas(redis: redis) }

    func add(to admin: some RouterMethods<BasicRequestContext>, prefix: String, catalog: RouteCatalog) {
        catalog.on(admin, prefix: prefix, .put, "/advertised-apps/:item/conversion-value-schema") { request, context in
            let item = try PathParameters.item(context)
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
            return JSONAnswer.bytes(Array(json), status: .created)
        }
        catalog.on(admin, prefix: prefix, .get, "/advertised-apps/:item/conversion-value-schema") { _, context in
            let item = try PathParameters.item(context)
            return JSONAnswer.bytes(try await schemas.current(item), status: .ok)
        }
        catalog.on(admin, prefix: prefix, .get, "/advertised-apps/:item/conversion-value-schema/:version") { _, context in
            let item = try PathParameters.item(context)
            let version = try RequestParameters.schemaVersion(try context.parameters.require("version"))
            return JSONAnswer.bytes(try await schemas.stored(item, version: version), status: .ok)
        }
    }
}
