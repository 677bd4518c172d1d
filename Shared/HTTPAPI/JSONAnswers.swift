import AttributionModel
import Foundation
import Hummingbird
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// The JSON answers of the HTTP API's routes, ingest's and admin's alike.
public enum JSONAnswer {
    /// `bytes`, already JSON, as `application/json`.
    public static func bytes(_ bytes: [UInt8], status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// `object` written with sorted keys and unescaped slashes (URLs read as sent).
    public static func object(_ object: [String: Any], status: HTTPResponse.Status = .ok) throws -> Response {
        bytes(
            Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])),
            status: status)
    }

    /// The recent refusals listed under `key` and, for an ad network, those naming it without its
    /// signature (listed apart, and counted): what the admin API shows an operator and the public API
    /// shows the network itself.
    public static func recentRejections(_ redis: RedisConnection, _ key: String, unsignedOf network: String? = nil)
        async throws -> Response
    {
        let last = String(RejectionLog.capacity - 1)
        var commands = [RedisCommand("LRANGE", key, "0", last)]
        if let network {
            commands += [
                RedisCommand("LRANGE", RejectionLog.unsignedKey(network), "0", last),
                RedisCommand("HGET", RejectionLog.unsignedCounts, network),
            ]
        }
        let replies = try await redis.pipeline(commands)
        func list(_ reply: RedisReply) -> String { "[" + reply.elements.compactMap(\.string).joined(separator: ",") + "]" }
        var json = "{\"rejections\":" + list(replies[0])
        if network != nil {
            json +=
                ",\"unsigned-rejections\":\(list(replies[1])),\"unsigned-refusals\":\(replies[2].string.flatMap { Int($0) } ?? 0)"
        }
        return bytes(Array((json + "}").utf8))
    }
}

/// The path parameters the routes share, read as `RequestParameters` reads them (400 with the reason).
public enum PathParameters {
    /// `:id`, an ad network.
    public static func adNetwork(_ context: BasicRequestContext) throws -> AdNetworkIdentifier {
        try RequestParameters.adNetwork(try context.parameters.require("id"))
    }

    /// `:item`, an app's item identifier.
    public static func item(_ context: BasicRequestContext) throws -> ItemIdentifier {
        try RequestParameters.itemIdentifier(try context.parameters.require("item"))
    }
}
