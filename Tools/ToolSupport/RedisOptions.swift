import ArgumentParser
import Foundation
import Logging
import RedisStreams

/// `--redis-url` and `--cluster`: where a running pipeline keeps its state (the operators' tool and the
/// benchmark's take the same options).
public struct RedisOptions: ParsableArguments {
    public init() {}

    @Option(name: .customLong("redis-url"), help: "The pipeline's Redis (with --cluster: any node of the cluster).")
    public var redisURL = "redis://127.0.0.1:6379/0"

    @Flag(help: "Redis is a Redis Cluster (the services run with REDIS_CLUSTER=true).")
    public var cluster = false

    @Option(
        name: .customLong("redis-password-file"),
        help: """
            A file holding the password of the URL's user, as the services' REDIS_PASSWORD_FILE (which is \
            read when this is not given and the URL holds no password), so the password stays out of the \
            command line.
            """)
    public var redisPasswordFile: String?

    /// A connection (the caller closes it).
    public func connect(label: String) throws -> RedisConnection {
        var configuration = try RedisConfiguration(url: redisURL)
        configuration.cluster = cluster
        // The option always; the environment's file only when the URL carries no password of its own
        // (an operator's shell may inherit a service's environment and a file it cannot read).
        let inherited = configuration.password == nil ? ProcessInfo.processInfo.environment["REDIS_PASSWORD_FILE"] : nil
        if let file = redisPasswordFile ?? inherited {
            guard let password = RedisConfiguration.password(fromFile: file) else {
                throw ValidationError("cannot read the Redis password file \(file)")
            }
            configuration.password = password
        }
        return RedisConnection(configuration: configuration, logger: Logger(label: label))
    }
}
