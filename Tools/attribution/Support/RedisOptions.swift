import ArgumentParser
import Logging
import RedisStreams

/// `--redis-url` and `--cluster`: where a running pipeline keeps its state.
struct RedisOptions: ParsableArguments {
    @Option(name: .customLong("redis-url"), help: "The pipeline's Redis (with --cluster: any node of the cluster).")
    var redisURL = "redis://127.0.0.1:6379/0"

    @Flag(help: "Redis is a Redis Cluster (the services run with REDIS_CLUSTER=true).")
    var cluster = false

    /// A connection (the caller closes it).
    func connect(label: String) throws -> RedisConnection {
        var configuration = try RedisConfiguration(url: redisURL)
        configuration.cluster = cluster
        return RedisConnection(configuration: configuration, logger: Logger(label: label))
    }
}
