import ArgumentParser
import Foundation
import Logging
import RedisStreams

/// `--redis-url` and `--cluster`: where a running pipeline keeps its state (the operators' tool and the
/// benchmark's take the same options).
public struct RedisOptions: ParsableArguments {
    public init() {}

    @Option(
        name: .customLong("redis-url"),
        help: "The pipeline's Redis (with --cluster: any node of the cluster); rediss://… for TLS.")
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

    @Option(
        name: .customLong("redis-tls-ca-file"),
        help:
            "With rediss://: the CA bundle (PEM) that signs the server's certificate (default: REDIS_TLS_CA_FILE, else the system's roots)."
    )
    public var tlsCAFile: String?

    @Option(
        name: .customLong("redis-tls-cert-file"),
        help: "With rediss://: a client certificate (PEM) for a Redis that demands one (default: REDIS_TLS_CERT_FILE).")
    public var tlsCertificateFile: String?

    @Option(name: .customLong("redis-tls-key-file"), help: "Its private key (PEM) (default: REDIS_TLS_KEY_FILE).")
    public var tlsKeyFile: String?

    @Option(
        name: .customLong("redis-tls-server-name"),
        help:
            "With rediss://: the name the server's certificate carries, when not the URL's host (default: REDIS_TLS_SERVER_NAME)."
    )
    public var tlsServerName: String?

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
        // As the services read them, unless given here; only with a rediss:// URL (a service's environment
        // with a redis:// URL given here must not turn into a refusal).
        if configuration.tls != nil {
            let environment = ProcessInfo.processInfo.environment
            do {
                try configuration.applyTLS(
                    caFile: tlsCAFile ?? environment["REDIS_TLS_CA_FILE"],
                    certificateFile: tlsCertificateFile ?? environment["REDIS_TLS_CERT_FILE"],
                    keyFile: tlsKeyFile ?? environment["REDIS_TLS_KEY_FILE"],
                    serverName: tlsServerName ?? environment["REDIS_TLS_SERVER_NAME"])
            } catch {
                throw ValidationError("Redis TLS: \(error.message)")
            }
        } else if tlsCAFile != nil || tlsCertificateFile != nil || tlsKeyFile != nil || tlsServerName != nil {
            throw ValidationError("the --redis-tls-* options apply to TLS only: the Redis URL must start with rediss://")
        }
        return RedisConnection(configuration: configuration, logger: Logger(label: label))
    }
}
