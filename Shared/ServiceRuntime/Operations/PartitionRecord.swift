import Logging
import PipelineCatalog
import RedisStreams

/// The partition count recorded in Redis: the first service to start writes its `PARTITIONS`; every
/// later one compares. Keys and streams are named by partition, so a service with another count would
/// read and write where no one else does: it refuses to start instead.
public enum PartitionRecord {
    /// Records or compares; waits (with backoff) while Redis is unreachable; throws a
    /// `ConfigurationError` on a mismatch.
    public static func check(_ partitioning: Partitioning, on connection: RedisConnection, logger: Logger) async throws {
        try await RedisRetry.untilAnswered("cannot read the partition count from Redis, retrying", logger: logger) {
            // SET NX with GET: the value already recorded, or nil when this call recorded ours.
            let reply = try await connection.send(
                RedisCommand("SET", RegistryKeys.partitions, String(partitioning.count), "NX", "GET"))
            guard let recorded = reply.string else { return }
            guard recorded == String(partitioning.count) else {
                throw ConfigurationError(
                    key: "PARTITIONS",
                    problem:
                        "is \(partitioning.count), but this Redis holds a pipeline with \(recorded) partitions; start every service with PARTITIONS=\(recorded) (the count is fixed per deployment)"
                )
            }
        }
    }
}

/// A service starting before its Redis waits for it instead of stopping (compose starts them together).
public enum RedisRetry {
    /// Runs `body` until it ends without a `RedisError`, logging `message` and backing off from 100 ms
    /// to 5 s between tries; any other error is thrown.
    public static func untilAnswered<T>(
        isolation: isolated (any Actor)? = #isolation, _ message: String, logger: Logger, _ body: () async throws -> T
    ) async throws -> T {
        var delay = 100
        while true {
            do {
                return try await body()
            } catch let error as RedisError {
                logger.error(
                    "\(message)", metadata: ["error": "\(error)", "retry.milliseconds": "\(delay)"])
                try await Task.sleep(for: .milliseconds(delay))
                delay = min(delay * 2, 5_000)
            }
        }
    }
}

extension PartitionRecord {
    /// The partitions recorded in Redis, for tools that read or write a running pipeline's keys
    /// (status, ledger, load generators); the default when no service has started yet.
    public static func read(on connection: RedisConnection) async throws -> Partitioning {
        guard let recorded = try await connection.send(RedisCommand("GET", RegistryKeys.partitions)).string else {
            return Partitioning()
        }
        guard let count = Int(recorded), (1...Partitioning.maximumCount).contains(count) else {
            throw RedisError(.unexpectedReply, "\(RegistryKeys.partitions) holds \(recorded), not a partition count")
        }
        return Partitioning(count: count)
    }
}
