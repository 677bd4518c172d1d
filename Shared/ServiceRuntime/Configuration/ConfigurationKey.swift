/// Every configuration key the services read, in one catalog: the README's configuration table and the
/// compose check are tested against it, so a key cannot be read without being documented.
public struct ConfigurationKey: Sendable, Hashable {
    public let name: String
    public let type: String
    /// The default as text; nil means required.
    public let defaultValue: String?
    public let services: [String]
    public let summary: String

    public init(_ name: String, _ type: String, default defaultValue: String?, services: [String], _ summary: String) {
        self.name = name
        self.type = type
        self.defaultValue = defaultValue
        self.services = services
        self.summary = summary
    }
}

extension ConfigurationKey {
    static let allServices = ["ingest", "verifier", "attribution-winner", "scheduler", "dispatcher"]
    static let workers = ["verifier", "attribution-winner", "scheduler", "dispatcher"]

    public static let redisURL = ConfigurationKey(
        "REDIS_URL", "URL", default: "redis://127.0.0.1:6379/0", services: allServices,
        "Redis to use: `redis://host:port/db`.")
    public static let timeScale = ConfigurationKey(
        "TIME_SCALE", "number > 0", default: "1", services: allServices,
        "Divides every lifecycle duration (windows, delays, retries, cooldowns, freshness). 86400 plays a day in a second.")
    public static let logLevel = ConfigurationKey(
        "LOG_LEVEL", "trace…critical", default: "info", services: allServices, "Log level.")
    public static let httpHost = ConfigurationKey(
        "HTTP_HOST", "address", default: "127.0.0.1", services: allServices,
        "Address the HTTP server binds (ingest's API; the workers' /health and /metrics).")
    public static let httpPort = ConfigurationKey(
        "HTTP_PORT", "port", default: "8080 (ingest), 9090 (workers)", services: allServices, "HTTP port.")
    public static let httpIdleTimeoutMilliseconds = ConfigurationKey(
        "HTTP_IDLE_TIMEOUT_MS", "milliseconds", default: "30000", services: allServices,
        "A connection that sends nothing for this long is closed, and a request body must arrive whole within it (408): idle or trickling clients cannot hold connections open."
    )
    public static let consumerName = ConfigurationKey(
        "CONSUMER_NAME", "string", default: "hostname-pid", services: workers,
        "This replica's name in its consumer group; must be unique per replica.")
    public static let batchSize = ConfigurationKey(
        "BATCH_SIZE", "integer ≥ 1", default: "100", services: workers, "Messages read per XREADGROUP.")
    public static let claimIdleMilliseconds = ConfigurationKey(
        "CLAIM_IDLE_MS", "milliseconds", default: "30000", services: workers,
        "A message pending this long (its consumer died) is claimed by another replica.")
    public static let maxAttempts = ConfigurationKey(
        "MAX_ATTEMPTS", "integer ≥ 1", default: "3", services: workers,
        "Failed processing attempts before a message goes to the stage's dead-letter stream.")
    public static let adminToken = ConfigurationKey(
        "ADMIN_TOKEN", "secret", default: nil, services: ["ingest"], "Bearer token the admin API requires.")
    public static let maxBodyBytes = ConfigurationKey(
        "MAX_BODY_BYTES", "bytes", default: "65536", services: ["ingest"], "Largest request body accepted.")
    public static let keyRotationGraceHours = ConfigurationKey(
        "KEY_ROTATION_GRACE_HOURS", "hours", default: "72", services: ["ingest"],
        "After an ad network registers a new key, its previous key stays valid this long (per request: previous-key-grace-seconds)."
    )
    public static let crowdTierThresholds = ConfigurationKey(
        "CROWD_TIER_THRESHOLDS", "3 integers", default: "10,100,1000", services: ["scheduler"],
        "Distinct conversions over 30 days needed for tiers 1, 2, 3.")
    public static let timerPollMilliseconds = ConfigurationKey(
        "TIMER_POLL_MS", "milliseconds", default: "100", services: ["attribution-winner", "scheduler", "dispatcher"],
        "How often due items are moved out of the delayed queues.")
    public static let signingKeyFile = ConfigurationKey(
        "SIGNING_KEY_FILE", "path", default: "generated at start", services: ["dispatcher"],
        "P-256 private key (PEM) that signs postbacks. Without it a key is generated per process: fine for one replica and a demo, not for production."
    )
    public static let signingKeyID = ConfigurationKey(
        "SIGNING_KEY_ID", "string", default: "attribution-pipeline/0", services: ["dispatcher"],
        "`kid` of production postbacks.")
    public static let developmentSigningKeyFile = ConfigurationKey(
        "DEVELOPMENT_SIGNING_KEY_FILE", "path", default: "generated at start", services: ["dispatcher"],
        "Private key for postbacks of development impressions.")
    public static let developmentSigningKeyID = ConfigurationKey(
        "DEVELOPMENT_SIGNING_KEY_ID", "string", default: "attribution-pipeline-development/0",
        services: ["dispatcher"], "`kid` of postbacks from development impressions.")
    public static let deliveryTimeoutMilliseconds = ConfigurationKey(
        "DELIVERY_TIMEOUT_MS", "milliseconds", default: "10000", services: ["dispatcher"],
        "Time allowed for one postback POST; a timeout is a failed attempt.")
    public static let conversionSettleMilliseconds = ConfigurationKey(
        "CONVERSION_SETTLE_MS", "milliseconds (wall clock, not scaled)", default: "2000", services: ["attribution-winner"],
        "A conversion waits this long before it is attributed, so impressions reported a little after it still count. An impression reported later than that is counted in `winner_late_impressions_total`. 0 attributes at once. Keep it below the first window's scaled length."
    )
    public static let windowCloseGraceMilliseconds = ConfigurationKey(
        "WINDOW_CLOSE_GRACE_MS", "milliseconds (wall clock, not scaled)", default: "10000", services: ["scheduler"],
        "A conversion window's timer fires this long after the window ends, so updates stamped before the end but still in the pipeline count at once (keep it above `CONVERSION_SETTLE_MS`); later ones still count while the window's postbacks are held, by swapping them. The postback is still prepared as of the end; capped at half the shortest postback delay."
    )
    public static let postbackURLAllowList = ConfigurationKey(
        "POSTBACK_URL_ALLOWLIST", "hosts", default: "none", services: ["ingest", "dispatcher"],
        "Comma-separated hosts (or host:port) that postback URLs and copy endpoints may use with http or a private address (tests, demos, an in-cluster receiver). Everything else must be https to public addresses."
    )
    public static let deliveryConcurrencyPerHost = ConfigurationKey(
        "DELIVERY_CONCURRENCY_PER_HOST", "integer ≥ 1", default: "16", services: ["dispatcher"],
        "Postback POSTs in flight at once per destination host, per dispatcher replica (connections are pooled and kept alive)."
    )
    public static let signingKeyGraceHours = ConfigurationKey(
        "SIGNING_KEY_GRACE_HOURS", "hours ≥ 217", default: "240", services: ["ingest", "dispatcher"],
        "After a dispatcher stops signing with a key (rotation), the JWKS keeps listing it this long (scaled by TIME_SCALE), longer than the 9-day retry window so retried bytes still verify."
    )
    public static let streamRetentionHours = ConfigurationKey(
        "STREAM_RETENTION_HOURS", "hours", default: "24", services: workers,
        "Entries of a worker's input stream that every group has acknowledged are trimmed once older than this (wall clock); 0 keeps them forever. Consumed events, and the device identifiers in them, do not stay in Redis. The verifier also trims `rejected` (no group reads it) by age alone."
    )
    /// The catalog, in the order the README lists it.
    public static let all: [ConfigurationKey] = [
        redisURL, timeScale, logLevel, httpHost, httpPort, httpIdleTimeoutMilliseconds, consumerName, batchSize,
        claimIdleMilliseconds,
        maxAttempts, streamRetentionHours, adminToken, maxBodyBytes, keyRotationGraceHours, crowdTierThresholds,
        timerPollMilliseconds,
        conversionSettleMilliseconds, windowCloseGraceMilliseconds, postbackURLAllowList, signingKeyFile,
        signingKeyID, developmentSigningKeyFile, developmentSigningKeyID, deliveryTimeoutMilliseconds, deliveryConcurrencyPerHost,
        signingKeyGraceHours,
    ]

    /// The README's configuration table, generated from the catalog (`ingest --configuration-table`).
    public static func markdownTable() -> String {
        var lines = ["| variable | type | default | read by | meaning |", "|---|---|---|---|---|"]
        for key in all {
            let services = key.services == allServices ? "all" : key.services.joined(separator: ", ")
            lines.append(
                "| `\(key.name)` | \(key.type) | \(key.defaultValue.map { "`\($0)`" } ?? "required") | \(services) | \(key.summary) |"
            )
        }
        return lines.joined(separator: "\n")
    }
}
