import AttributionModel
import Foundation
import Logging
import PipelineCatalog
import RedisStreams

// The keys every service reads, and the ones every worker reads.

extension ConfigurationKey {
    static let allServices = RedisRights.services
    static let workers = ["verifier", "attribution-winner", "scheduler", "dispatcher"]
}

extension ConfigurationKey.Typed where Value == RedisConfiguration {
    public static var redisURL: Self {
        let local = RedisConfiguration()
        return Self(
            "REDIS_URL", type: "URL", default: (local.url, { local }),
            allowed: "redis://[user[:password]@]host[:port][/db], or rediss://… for TLS", services: ConfigurationKey.allServices,
            "Redis to use: `redis://host:port/db`, or `rediss://host:port/db` for TLS (the server's certificate verified against the system's trust roots or `REDIS_TLS_CA_FILE`, and its name against the host). With a user (an ACL user, see docs/operating/redis.md) every connection sends `AUTH`; its password goes here or, better, in `REDIS_PASSWORD_FILE`."
        ) { text throws(ConfigurationKey.Unreadable) in
            do { return try RedisConfiguration(url: text) } catch { throw ConfigurationKey.Unreadable("\(error)") }
        }
    }
}

extension ConfigurationKey.Typed where Value == String? {
    public static var redisPasswordFile: Self {
        .path(
            "REDIS_PASSWORD_FILE", unsetMeans: "the password in REDIS_URL, if any", services: ConfigurationKey.allServices,
            "File holding the password of `REDIS_URL`'s user (one line; a trailing newline is ignored): a password kept out of the environment and the process list."
        )
    }
}

extension ConfigurationKey.Typed where Value == String? {
    public static var redisTLSCAFile: Self {
        .path(
            "REDIS_TLS_CA_FILE", unsetMeans: "the system's trust roots", services: ConfigurationKey.allServices,
            "With a `rediss://` `REDIS_URL`: a PEM bundle of the CA certificates that sign the Redis server's certificate (a managed Redis's CA, or your own)."
        )
    }

    public static var redisTLSCertificateFile: Self {
        .path(
            "REDIS_TLS_CERT_FILE", unsetMeans: "no client certificate", services: ConfigurationKey.allServices,
            "With a `rediss://` `REDIS_URL`: the client certificate (PEM, its chain after it) for a Redis that demands one (`tls-auth-clients yes`); with `REDIS_TLS_KEY_FILE`."
        )
    }

    public static var redisTLSKeyFile: Self {
        .path(
            "REDIS_TLS_KEY_FILE", unsetMeans: "no client certificate", services: ConfigurationKey.allServices,
            "The private key (PEM) of `REDIS_TLS_CERT_FILE`."
        )
    }

    public static var redisTLSServerName: Self {
        Self(
            "REDIS_TLS_SERVER_NAME", type: "host name",
            default: ("the host of REDIS_URL (for a cluster, each node's as the cluster announces it)", { nil }),
            services: ConfigurationKey.allServices,
            "With a `rediss://` `REDIS_URL`: the name the server's certificate must carry, sent as SNI, when it is not the host connected to (a cluster announcing addresses, a certificate for one name). Without it an IP address is checked against the certificate's IP entries."
        ) { text in text }
    }
}

extension ConfigurationKey.Typed where Value == TimePolicy {
    public static var timeScale: Self {
        let realTime = TimePolicy.realTime
        return Self(
            "TIME_SCALE", type: "number", default: (ConfigurationKey.describe(realTime.scale), { realTime }), allowed: "> 0",
            services: ConfigurationKey.allServices,
            "Divides every lifecycle duration (windows, delays, retries, cooldowns, freshness). 86400 plays a day in a second."
        ) { text throws(ConfigurationKey.Unreadable) in
            guard let scale = Double(text), scale > 0, scale.isFinite else {
                throw ConfigurationKey.Unreadable("must be a positive number, got \(text)")
            }
            return TimePolicy(scale: scale)
        }
    }
}

extension ConfigurationKey.Typed where Value == Logger.Level {
    public static var logLevel: Self {
        let info = Logger.Level.info
        // An unknown level has always meant the default rather than a refusal to start: kept so.
        return Self(
            "LOG_LEVEL", type: "log level", default: (info.rawValue, { info }),
            allowed: Logger.Level.allCases.map(\.rawValue).joined(separator: ", ") + "; anything else means \(info.rawValue)",
            services: ConfigurationKey.allServices,
            "Log level."
        ) { text in Logger.Level(rawValue: text) ?? info }
    }
}

extension ConfigurationKey.Typed where Value == LogFormat {
    public static var logFormat: Self {
        Self(
            "LOG_FORMAT", type: "choice", default: (LogFormat.text.rawValue, { .text }),
            allowed: LogFormat.allCases.map(\.rawValue).joined(separator: ", "), services: ConfigurationKey.allServices,
            "How log lines are written to standard error: `text` (swift-log's lines), or `json`: one object per line with `time` (ISO 8601, UTC), `level`, `label` (the service), `source`, `message` and each metadata key as a member of its own."
        ) { text throws(ConfigurationKey.Unreadable) in
            guard let format = LogFormat(rawValue: text) else {
                throw ConfigurationKey.Unreadable(
                    "must be one of \(LogFormat.allCases.map(\.rawValue).joined(separator: ", ")), got \(text)")
            }
            return format
        }
    }
}

extension ConfigurationKey.Typed where Value == String {
    public static var httpHost: Self {
        .text(
            "HTTP_HOST", type: "address", default: "127.0.0.1", services: ConfigurationKey.allServices,
            "Address the HTTP server binds (ingest's public API; the admin API; the workers' /health, /ready and /metrics). Keep admin's off the network the public API faces."
        )
    }

    public static var operationsHTTPHost: Self {
        .text(
            "OPERATIONS_HTTP_HOST", type: "address", default: "127.0.0.1", services: ["ingest"],
            "Address ingest's operations listener binds: `/metrics` and `/ready` with its details. Keep it off the network the public API faces."
        )
    }

    public static var consumerName: Self {
        Self(
            "CONSUMER_NAME", type: "string",
            default: ("hostname-pid", { "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)" }),
            services: ConfigurationKey.workers, "This replica's name in its consumer group; must be unique per replica."
        ) { text in text }
    }
}

extension ConfigurationKey.Typed where Value == HTTPPort {
    public static var httpPort: Self {
        let ports = 0...65_535
        let unset = HTTPPort(configured: nil)
        return Self(
            "HTTP_PORT", type: "port",
            default: ("\(HTTPPort.ingest) (ingest), \(HTTPPort.admin) (admin), \(HTTPPort.worker) (workers)", { unset }),
            allowed: ConfigurationKey.describe(ports), services: ConfigurationKey.allServices, "HTTP port."
        ) { text throws(ConfigurationKey.Unreadable) in
            guard let port = Int(text), ports.contains(port) else { throw .outside(ports, text) }
            return HTTPPort(configured: port)
        }
    }

    public static var operationsHTTPPort: Self {
        let ports = 0...65_535
        return Self(
            "OPERATIONS_HTTP_PORT", type: "port",
            default: ("\(HTTPPort.operations)", { HTTPPort(configured: HTTPPort.operations) }),
            allowed: ConfigurationKey.describe(ports) + ", not `HTTP_PORT`", services: ["ingest"],
            "Port of ingest's operations listener (`/metrics`, `/ready` with details, `/health`); the public port serves neither `/metrics` nor the details."
        ) { text throws(ConfigurationKey.Unreadable) in
            guard let port = Int(text), ports.contains(port) else { throw .outside(ports, text) }
            return HTTPPort(configured: port)
        }
    }
}

extension ConfigurationKey.Typed where Value == Milliseconds {
    public static var httpIdleTimeoutMilliseconds: Self {
        .milliseconds(
            "HTTP_IDLE_TIMEOUT_MS", default: 30_000, range: 100...3_600_000, services: ConfigurationKey.allServices,
            "A connection that sends nothing for this long is closed (also in the middle of a request body), and a request body must arrive whole within it: a part arriving later is answered 408 `body-timeout`. Idle or trickling clients cannot hold connections open."
        )
    }

    public static var claimIdleMilliseconds: Self {
        .milliseconds(
            "CLAIM_IDLE_MS", default: 30_000, range: 1...86_400_000, services: ConfigurationKey.workers,
            "A message pending this long (its consumer died) is claimed by another replica.")
    }

    public static var timerPollMilliseconds: Self {
        .milliseconds(
            "TIMER_POLL_MS", default: 100, range: 1...60_000, services: ["attribution-winner", "scheduler", "dispatcher"],
            "How often due items are moved out of the delayed queues.")
    }
}

extension ConfigurationKey.Typed where Value == Int {
    public static var batchSize: Self {
        .integer(
            "BATCH_SIZE", default: 200, range: 1...10_000, services: ConfigurationKey.workers,
            "Messages one consumer loop reads per XREADGROUP and decides in one batch (its lookups in one pipeline, its writes in one transaction). Larger batches take fewer round trips per message, which is what a Redis a millisecond away costs (docs/benchmarks.md, the round-trip table)."
        )
    }

    public static var maxAttempts: Self {
        .integer(
            "MAX_ATTEMPTS", default: 3, range: 1...1_000, services: ConfigurationKey.workers,
            "Failed processing attempts before a message goes to the stage's dead-letter stream, and deliveries to consumers "
                + "that stopped holding it (a message that crashes its process). A failure Redis caused (a failover, a lost "
                + "connection) counts neither."
        )
    }
}

extension ConfigurationKey.Typed where Value == Duration {
    public static var streamRetentionHours: Self {
        .hours(
            "STREAM_RETENTION_HOURS", default: 24, range: 0...8_760, services: ConfigurationKey.workers,
            "Entries of a worker's input stream that every group has acknowledged are trimmed once older than this (wall clock); 0 keeps them forever. Consumed events, and the device identifiers in them, do not stay in Redis. The verifier also trims `rejected` (no group reads it) by age alone."
        )
    }

    public static var deadLetterRetentionHours: Self {
        .hours(
            "DEAD_LETTER_RETENTION_HOURS", default: 720, range: 0...87_600, services: ConfigurationKey.workers,
            "A worker's dead letters (`<stage>:dead`, which hold the failed messages, device identifiers included) are trimmed once older than this (wall clock); 0 keeps them forever. Inspect or replay them before."
        )
    }
}

/// `HTTP_PORT`: the number set, or unset, the service's own default (ingest, admin and the workers
/// differ, so that one host can run one of each on its defaults).
public struct HTTPPort: Sendable, Hashable {
    static let ingest = 8080
    static let admin = 8081
    static let operations = 8082
    static let worker = 9090

    let configured: Int?

    public func port(for service: String) -> Int {
        configured ?? [("ingest", Self.ingest), ("admin", Self.admin)].first { $0.0 == service }?.1 ?? Self.worker
    }
}

extension ConfigurationKey {
    /// A number as the table shows it: `1`, not `1.0`.
    static func describe(_ number: Double) -> String {
        number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }
}

extension ConfigurationKey.Typed where Value == Partitioning {
    public static var partitions: Self {
        let range = 1...Partitioning.maximumCount
        let standard = Partitioning()
        return Self(
            "PARTITIONS", type: "integer", default: (String(standard.count), { standard }),
            allowed: ConfigurationKey.describe(range), services: ConfigurationKey.allServices,
            "How many partitions the pipeline's streams and keys are split into, by device. Fixed per deployment: the first service to start records it in Redis, and a service started with another value refuses to start."
        ) { text throws(ConfigurationKey.Unreadable) in
            guard let count = Int(text), range.contains(count) else { throw .outside(range, text) }
            return Partitioning(count: count)
        }
    }
}

extension ConfigurationKey.Typed where Value == Bool {
    public static var redisCluster: Self {
        .boolean(
            "REDIS_CLUSTER", services: ConfigurationKey.allServices,
            "`true`: `REDIS_URL` names one node of a Redis Cluster (database 0); commands are routed by hash slot and follow MOVED/ASK through resharding and failover. `false`: one Redis."
        )
    }

    /// `true` or `false` (also 1/0, yes/no), false by default.
    static func boolean(_ name: String, services: [String], _ summary: String) -> Self {
        Self(
            name, type: "boolean", default: ("false", { false }), allowed: "true, false (or yes, no, 1, 0; any case)",
            services: services, summary
        ) {
            text throws(ConfigurationKey.Unreadable) in
            switch text.lowercased() {
            case "true", "1", "yes": return true
            case "false", "0", "no": return false
            default: throw ConfigurationKey.Unreadable("must be true or false (or yes, no, 1, 0), got \(text)")
            }
        }
    }
}
