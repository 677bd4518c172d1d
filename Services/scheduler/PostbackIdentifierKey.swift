import AttributionModel
import Logging
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// The secret behind `postback-identifier`s, shared by every scheduler replica through Redis: the first
/// to start writes 32 random bytes (SET NX), the others read them. Read once at start: a replica that
/// planned with another key (one written in the moment before a failover lost it) would give a
/// re-planned postback a new identifier, which is what every postback had before the key existed.
/// The key is as secret as the plans beside it in Redis, which already link a conversion's postbacks.
enum PostbackIdentifierKey {
    static func load(on connection: RedisConnection, logger: Logger) async throws -> PostbackIdentifiers {
        var random = KernelRandom()
        let fresh = Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
        let stored = try await RedisRetry.untilAnswered("cannot read the postback-identifier key, retrying", logger: logger) {
            try await connection.send(RedisCommand("SET", StageKeys.postbackIdentifierKey, fresh, "NX", "GET")).string ?? fresh
        }
        await connection.close()
        guard let key = Hex.decode(stored), key.count == 32 else {
            throw RedisError(
                .unexpectedReply,
                "\(StageKeys.postbackIdentifierKey) holds \(stored.count) characters, not 32 bytes in hex; delete it to let a scheduler write a new one"
            )
        }
        return PostbackIdentifiers(key: key)
    }
}
