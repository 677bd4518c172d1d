import AttributionModel
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// The registry's conversion-value schemas as stored JSON: an app's current one, and any version by
/// number (an upload never overwrites one). 404 with the reason when there is none.
public struct ValueSchemas: Sendable {
    let redis: RedisConnection

    public init(redis: RedisConnection) { self.redis = redis }

    public func current(_ item: ItemIdentifier) async throws -> [UInt8] {
        guard let json = try await redis.send(RedisCommand("HGET", RegistryKeys.currentSchemas, String(item))).bytes else {
            throw ProblemDetails(.notFound, reason: .noSchema, detail: "advertised app \(item) has no conversion-value schema")
        }
        return json
    }

    public func stored(_ item: ItemIdentifier, version: Int) async throws -> [UInt8] {
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
