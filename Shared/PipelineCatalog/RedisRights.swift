/// Each service's rights on Redis as ACL rules: the keys it may write, the keys it may only read, and
/// the commands it may send. One table serves `attribution redis-acl` (the ACL file compose starts
/// Redis with) and the tests, which run every single-node pipeline test with each service connected
/// as its own ACL user: a right missing here fails a test, a right too many is visible in one place.
public enum RedisRights {
    /// The pipeline's services, each its own Redis user (and the configuration keys' `services`).
    public static let services = ["ingest", "admin", "verifier", "attribution-winner", "scheduler", "dispatcher"]

    /// What every service reads: the registry, and the streams, queues and dead letters its gauges count
    /// (`PipelineSnapshot`). Each service may also record the partition count once (`PartitionRecord`).
    static let readByAll = [
        "registry:{registry}:*", "events:*", "verified:*", "rejected:*", "attributions:*", "postbacks:*",
        "winner:settled:*", "winner:settling:*", "scheduler:timers:*", "scheduler:windows:*", "scheduler:held:*",
        "dispatcher:retries:*", "deliveries:dead:*", "verifier:dead:*", "attribution-winner:dead:*", "scheduler:dead:*",
        "dispatcher:dead:*", "dispatcher:circuits",
    ]

    /// The keys each service writes (and reads). admin writes everywhere: the admin API owns the
    /// registry, device erasure deletes a device's keys and stream entries in every stage, and the
    /// dead-letter routes replay deliveries into `postbacks`. ingest, the service that faces the
    /// internet, writes only events and its own records (idempotency, the test-postback rate).
    static let writes: [String: [String]] = [
        "ingest": ["events:*", "ingest:*"],
        "admin": ["*"],
        "verifier": ["events:*", "verified:*", "rejected:*", "verifier:*"],
        // The app's refusal list is the verifier's key, appended to for conversions it does not attribute.
        "attribution-winner": [
            "verified:*", "winner:*", "attributions:*", "rejected:*", "attribution-winner:*", "verifier:rejections:app:*",
        ],
        "scheduler": ["attributions:*", "scheduler:*", "postbacks:*"],
        "dispatcher": [
            "postbacks:*", "dispatcher:*", "deliveries:dead:*", "registry:{registry}:jwks", "registry:{registry}:jwks:seen",
        ],
    ]

    /// Keys a service reads besides `readByAll`: ingest serves an ad network its own refusals, and an
    /// app the outcome of a re-engagement it waits for.
    static let alsoReads: [String: [String]] = ["ingest": ["verifier:rejections:*", "winner:outcomes:*"]]

    /// Data commands only: no administration (`CONFIG`, `ACL`, `DEBUG`, `SHUTDOWN`), no `KEYS`,
    /// `FLUSHALL` or other `@dangerous` commands, no pub/sub; cluster routing reads the slot map, and
    /// the gauges read `INFO` (Redis's memory against `maxmemory`).
    static let commands = [
        "-@all", "+@read", "+@write", "+@stream", "+@scripting", "+@transaction", "+@connection", "+@keyspace",
        "-@dangerous", "+cluster|slots", "+cluster|nodes", "+wait", "+info",
    ]

    /// The ACL rules (after the user's name, state and password) for `service`.
    public static func rules(for service: String) -> [String] {
        let written = writes[service] ?? []
        let keys = written.map { "~\($0)" } + (written.contains("*") ? [] : ["~registry:{registry}:partitions"])
        let reads = written.contains("*") ? [] : (readByAll + (alsoReads[service] ?? [])).map { "%R~\($0)" }
        return ["resetchannels"] + keys + reads + commands
    }

    /// One line of an ACL file: `service` with its rules and the SHA-256 (hex) of its password.
    public static func aclLine(_ service: String, passwordSHA256 hash: String) -> String {
        (["user", service, "on", "#\(hash)"] + rules(for: service)).joined(separator: " ")
    }

    /// The arguments of `ACL SETUSER` giving `service` its rules and `password`.
    public static func setUser(_ service: String, password: String) -> [String] {
        ["ACL", "SETUSER", service, "reset", "on", ">\(password)"] + rules(for: service)
    }
}
