import AttributionModel
import Logging
import PipelineCatalog
import RedisStreams

/// What every service reads from the environment before anything else, once, through the catalog:
/// Redis, time, partitions, logging, its HTTP listener(s), and for the stages their consumer loops.
/// A key the service does not read (`ConfigurationKey.services`) keeps its default, whatever is set,
/// as `--help` promises. Reading it checks every value, so a bad one stops the service with its one
/// line before it connects to anything.
public struct PipelineSettings: Sendable {
    /// The service's name (`ServiceHelp.name`), which decides which keys apply.
    public var name: String
    public var logLevel: Logger.Level
    public var logFormat: LogFormat
    /// Where Redis is (`REDIS_URL`, `REDIS_PASSWORD_FILE`, `REDIS_CLUSTER`).
    public var redis: RedisConfiguration
    public var policy: TimePolicy
    /// The deployment's partitions (`PARTITIONS`).
    public var partitioning: Partitioning
    public var http: Listener
    /// ingest's operations listener (`/metrics`, the detailed `/ready`); nil for the other services,
    /// which serve those on `http`.
    public var operations: Listener?
    public var httpIdleTimeoutMilliseconds: Milliseconds
    /// The stages' consumer-group settings; nil for ingest.
    public var worker: Worker?
    public var timerPollMilliseconds: Int

    /// Whether Redis is a cluster: then a transaction stays in one partition.
    public var cluster: Bool { redis.cluster }

    public struct Listener: Sendable, Equatable {
        public var host: String
        /// 0: any free port.
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    /// What each consumer loop of a stage reads its streams with.
    public struct Worker: Sendable {
        /// This replica's name in its consumer groups (`CONSUMER_NAME`).
        public var consumerName: String
        /// Consumer loops per stream (`CONSUMERS`), before the cap of one per partition.
        public var consumers: Int
        public var batchSize: Int
        public var claimIdleMilliseconds: Int
        public var maxAttempts: Int
        /// Wall-clock milliseconds; nil keeps entries forever.
        public var retentionMilliseconds: UInt64?
        public var deadLetterRetentionMilliseconds: UInt64?
    }

    public init(name: String, environment: ServiceEnvironment) throws(ConfigurationError) {
        self.name = name
        // A key this service does not read keeps its default, whatever is set (`--help` lists what applies).
        func applying<Value>(_ key: ConfigurationKey.Typed<Value>) throws(ConfigurationError) -> Value {
            key.key.services.contains(name) ? try environment.value(key) : try ServiceEnvironment([:]).value(key)
        }
        logLevel = try environment.value(.logLevel)
        logFormat = try environment.value(.logFormat)
        var redis = try environment.value(.redisURL)
        if let file = try environment.value(.redisPasswordFile) {
            guard let password = RedisConfiguration.password(fromFile: file) else {
                throw ConfigurationError(key: "REDIS_PASSWORD_FILE", problem: "cannot read \(file)")
            }
            redis.password = password
        }
        try Self.applyTLS(environment, to: &redis)
        redis.cluster = try environment.value(.redisCluster)
        if redis.cluster, redis.database != 0 {
            throw ConfigurationError(
                key: "REDIS_URL", problem: "a Redis Cluster has only database 0, got \(redis.database) with REDIS_CLUSTER=true")
        }
        self.redis = redis
        policy = try environment.value(.timeScale)
        partitioning = try environment.value(.partitions)
        http = Listener(host: try environment.value(.httpHost), port: try environment.value(.httpPort).port(for: name))
        httpIdleTimeoutMilliseconds = try environment.value(.httpIdleTimeoutMilliseconds)
        if ConfigurationKey.Typed<HTTPPort>.operationsHTTPPort.key.services.contains(name) {
            let operations = Listener(
                host: try environment.value(.operationsHTTPHost),
                port: try environment.value(.operationsHTTPPort).port(for: name))
            if operations.port == http.port, operations.port != 0 {
                throw ConfigurationError(
                    key: "OPERATIONS_HTTP_PORT", problem: "must differ from HTTP_PORT (both \(operations.port))")
            }
            self.operations = operations
        }
        if ConfigurationKey.workers.contains(name) {
            // Retention runs on the wall clock (not scaled); zero keeps entries forever.
            let retention = TimePolicy.realTime.milliseconds(try environment.value(.streamRetentionHours))
            let deadLetters = TimePolicy.realTime.milliseconds(try environment.value(.deadLetterRetentionHours))
            worker = Worker(
                consumerName: try environment.value(.consumerName), consumers: try environment.value(.consumers),
                batchSize: try environment.value(.batchSize),
                claimIdleMilliseconds: Int(try environment.value(.claimIdleMilliseconds)),
                maxAttempts: try environment.value(.maxAttempts),
                retentionMilliseconds: retention == 0 ? nil : UInt64(retention),
                deadLetterRetentionMilliseconds: deadLetters == 0 ? nil : UInt64(deadLetters))
        }
        timerPollMilliseconds = Int(try applying(.timerPollMilliseconds))
    }
}

extension PipelineSettings {
    /// `REDIS_TLS_*` applied to `REDIS_URL`'s configuration and loaded now: a problem with them stops the
    /// service at start, naming the key.
    static func applyTLS(_ environment: ServiceEnvironment, to redis: inout RedisConfiguration) throws(ConfigurationError) {
        let (caFile, certificateFile, keyFile, serverName) = (
            try environment.value(.redisTLSCAFile), try environment.value(.redisTLSCertificateFile),
            try environment.value(.redisTLSKeyFile), try environment.value(.redisTLSServerName)
        )
        do {
            try redis.applyTLS(caFile: caFile, certificateFile: certificateFile, keyFile: keyFile, serverName: serverName)
        } catch {
            let key =
                switch error.setting {
                case .caFile: "REDIS_TLS_CA_FILE"
                case .certificateFile: "REDIS_TLS_CERT_FILE"
                case .keyFile: "REDIS_TLS_KEY_FILE"
                case .serverName: "REDIS_TLS_SERVER_NAME"
                }
            throw ConfigurationError(key: key, problem: error.message)
        }
    }
}
