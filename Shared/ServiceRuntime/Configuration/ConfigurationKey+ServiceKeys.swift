import AttributionModel

// The keys only some services read: ingest's, admin's, the scheduler's, attribution-winner's and the dispatcher's.

extension ConfigurationKey.Typed where Value == String? {
    public static var adminToken: Self {
        .secret(
            "ADMIN_TOKEN", minimumLength: 32, file: "ADMIN_TOKEN_FILE", services: ["admin"],
            "Bearer token the admin API requires (for example `openssl rand -hex 24`).")
    }

    public static var adminTokenFile: Self {
        .path(
            "ADMIN_TOKEN_FILE", unsetMeans: "none: ADMIN_TOKEN is set instead", services: ["admin"],
            "A file holding `ADMIN_TOKEN` (a trailing newline is ignored), as Docker secrets are given; set this or `ADMIN_TOKEN`, not both."
        )
    }
}

extension ConfigurationKey.Typed where Value == String {
    public static var signingKeyID: Self {
        .text("SIGNING_KEY_ID", default: "attribution-pipeline/0", services: ["dispatcher"], "`kid` of production postbacks.")
    }

    public static var developmentSigningKeyID: Self {
        .text(
            "DEVELOPMENT_SIGNING_KEY_ID", default: "attribution-pipeline-development/0", services: ["dispatcher"],
            "`kid` of postbacks from development impressions.")
    }

    public static var testSigningKeyID: Self {
        .text(
            "TEST_SIGNING_KEY_ID", default: "attribution-pipeline-test/0", services: ["dispatcher"],
            "`kid` of test postbacks (`POST /v1/ad-networks/{id}/test-postbacks`), as Apple signs developer-settings postbacks with a key of their own."
        )
    }
}

extension ConfigurationKey.Typed where Value == String? {
    public static var signingKeyFile: Self {
        .path(
            "SIGNING_KEY_FILE", unsetMeans: "none: required unless DEVELOPMENT_MODE", services: ["dispatcher"],
            "P-256 private key (PEM) that signs postbacks, served in the JWKS as `SIGNING_KEY_ID`. The dispatcher does not start without it unless `DEVELOPMENT_MODE` is `true`."
        )
    }

    public static var developmentSigningKeyFile: Self {
        .path(
            "DEVELOPMENT_SIGNING_KEY_FILE", unsetMeans: "generated at start", services: ["dispatcher"],
            "Private key for postbacks of development impressions. Unset, one is generated per process, with the `kid` `<DEVELOPMENT_SIGNING_KEY_ID>-<8 hex digits of its public key>`."
        )
    }

    public static var testSigningKeyFile: Self {
        .path(
            "TEST_SIGNING_KEY_FILE", unsetMeans: "generated at start", services: ["dispatcher"],
            "Private key for test postbacks. Unset, one is generated per process, with the `kid` `<TEST_SIGNING_KEY_ID>-<8 hex digits of its public key>`."
        )
    }
}

extension ConfigurationKey.Typed where Value == Bool {
    public static var developmentMode: Self {
        .boolean(
            "DEVELOPMENT_MODE", services: ["dispatcher"],
            "`true`: a signing key file left unset is generated per process, with the `kid` `<SIGNING_KEY_ID>-<8 hex digits of its public key>` (each restart publishes a new key). For a demo or a test; never for production, where receivers pin the documented `kid`."
        )
    }
}

extension ConfigurationKey.Typed where Value == Int {
    public static var verifierThreads: Self {
        .integer(
            "VERIFIER_THREADS", default: 1, range: 0...256, services: ["verifier"],
            "Threads a batch's signature checks are split over (one verifier replica can use that many cores); 0: one per core the process may use. A batch under 32 impressions is checked on one. Default 1: on a machine the verifier shares with Redis and the other services the measured gain was small (about 5 %), and scaling replicas does the same."
        )
    }

    public static var consumers: Self {
        .integer(
            "CONSUMERS", default: 8, range: 1...64, services: ["verifier", "attribution-winner", "scheduler", "dispatcher"],
            "Consumer loops one replica of a stage runs on each stream it reads, each with its own Redis connection and its own consumer name in the group (`CONSUMER_NAME`, then `CONSUMER_NAME/1`, …): while one loop waits for Redis, another decides its batch, so the round trips to Redis cost less of the replica's capacity (docs/benchmarks.md, the round-trip table). The loops split the partitions between them (loop i reads every i-th), so one replica still handles each device's messages in order (separate replicas may not, by up to a batch's turn, which `CONVERSION_SETTLE_MS` absorbs). At most one loop per partition."
        )
    }

    public static var maxBodyBytes: Self {
        .integer(
            "MAX_BODY_BYTES", unit: "bytes", default: 65_536, range: 1_024...16_777_216, services: ["ingest"],
            "Largest body of a single-event request and of `/v1/conversion-values/evaluate`, and of each batch item; beyond it 413 `body-too-large`. Admin bodies have limits of their own (docs/reference/http-api.md)."
        )
    }

    public static var deliveryConcurrencyPerHost: Self {
        .integer(
            "DELIVERY_CONCURRENCY_PER_HOST", default: 16, range: 1...1_000, services: ["dispatcher"],
            "Postback POSTs in flight at once per destination (scheme, host and port), per dispatcher replica (connections are pooled and kept alive); 16 times as many more may wait for them, and past that a delivery waits in the retry queue, spending no retry, for about the time the queue takes to drain at the destination's pace (its recent attempts, or the oldest still under way; 50 ms to one delivery timeout)."
        )
    }
}

extension ConfigurationKey.Typed where Value == Duration {
    /// Not scaled by `TIME_SCALE`: admin applies it in real time.
    public static var keyRotationGraceHours: Self {
        .hours(
            "KEY_ROTATION_GRACE_HOURS", default: 72, range: 0...8_760, services: ["admin"],
            "After an ad network registers a new key, its previous key stays valid this long (per request: previous-key-grace-seconds)."
        )
    }

    /// At least the retry window (9 days) plus an hour, so a retry's stored bytes always verify against
    /// the JWKS; scaled by `TIME_SCALE`.
    public static var signingKeyGraceHours: Self {
        .hours(
            "SIGNING_KEY_GRACE_HOURS", default: 240, range: 217...87_600, services: ["ingest", "dispatcher"],
            "After a dispatcher stops signing with a key (rotation), the JWKS keeps listing it this long (scaled by TIME_SCALE), longer than the 9-day retry window so retried bytes still verify."
        )
    }
}

extension ConfigurationKey.Typed where Value == CrowdTierThresholds {
    public static var crowdTierThresholds: Self {
        let standard = CrowdTierThresholds()
        return Self(
            "CROWD_TIER_THRESHOLDS", type: "3 integers",
            default: ("\(standard.tier1),\(standard.tier2),\(standard.tier3)", { standard }),
            allowed: "0 ≤ tier 1 ≤ tier 2 ≤ tier 3", services: ["scheduler"],
            "Distinct conversions over 30 days needed for tiers 1, 2, 3."
        ) { text throws(ConfigurationKey.Unreadable) in
            guard let thresholds = CrowdTierThresholds(parsing: text) else {
                throw ConfigurationKey.Unreadable("must be three ascending integers, got \(text)")
            }
            return thresholds
        }
    }
}

extension ConfigurationKey.Typed where Value == Milliseconds {
    public static var conversionSettleMilliseconds: Self {
        .milliseconds(
            "CONVERSION_SETTLE_MS", note: "wall clock, not scaled", default: 2_000, range: 0...3_600_000,
            services: ["attribution-winner"],
            "A conversion waits this long before it is attributed, so impressions reported a little after it still count. The wait counts from when the verifier wrote the conversion to `verified`: attribution-winner, if behind, also waits until it has read `verified` that far, and until the verifier has finished every event ingest took before the conversion (an impression pending on a verifier replica that died is verified only once another claims it, after `CLAIM_IDLE_MS`) and the winner has read what it wrote for them (both counted in `winner_settle_extensions_total`), for at most 2 scaled days (at least 10 minutes). An impression reported later than that is counted in `winner_late_impressions_total`. 0 attributes at once. Capped at half the first conversion window's scaled length (24 h at `TIME_SCALE=1`, 1 s at 86400, 500 ms at 172800), so scaled runs never spend their first window settling; the cap is logged at start."
        )
    }

    public static var windowCloseGraceMilliseconds: Self {
        .milliseconds(
            "WINDOW_CLOSE_GRACE_MS", note: "wall clock, not scaled", default: 10_000, range: 0...3_600_000,
            services: ["scheduler"],
            "A conversion window's timer (set once a value is reported in the window; a window without one sends nothing and has no timer) fires this long after the window ends, so updates stamped before the end but still in the pipeline count at once (keep it above `CONVERSION_SETTLE_MS`); later ones still count while the window's postbacks are held, by swapping them. The postback is still prepared as of the end; capped at half the shortest postback delay."
        )
    }

    public static var deliveryTimeoutMilliseconds: Self {
        .milliseconds(
            "DELIVERY_TIMEOUT_MS", default: 10_000, range: 1...300_000, services: ["dispatcher"],
            "Time allowed for one postback POST (connecting, TLS, sending and the answer); a timeout is a failed attempt.")
    }
}

extension ConfigurationKey.Typed where Value == DestinationPolicy {
    public static var postbackURLAllowList: Self {
        Self(
            "POSTBACK_URL_ALLOWLIST", type: "hosts", default: ("none", { DestinationPolicy() }),
            allowed: "host or host:port, comma-separated", services: ["admin", "dispatcher"],
            "Comma-separated hosts (or host:port) that postback URLs and copy endpoints may use with http or a private address (tests, demos, an in-cluster receiver). Everything else must be https to public addresses."
        ) { text in DestinationPolicy(allowList: text) }
    }
}

/// `INGEST_WAIT_REPLICAS`: how many replicas must confirm an event before ingest answers 202.
public enum ReplicaWait: Sendable, Hashable {
    /// 1 on Redis Cluster, 0 on one Redis.
    case automatic
    case replicas(Int)

    /// The number to WAIT for.
    public func replicas(cluster: Bool) -> Int {
        switch self {
        case .automatic: cluster ? 1 : 0
        case .replicas(let count): count
        }
    }
}

extension ConfigurationKey.Typed where Value == ReplicaWait {
    public static var ingestWaitReplicas: Self {
        let range = 0...16
        return Self(
            "INGEST_WAIT_REPLICAS", type: "integer or auto", default: ("auto", { .automatic }),
            allowed: "auto, " + ConfigurationKey.describe(range), services: ["ingest"],
            "Replicas that must hold an event (Redis `WAIT`) before ingest answers 202; `auto` is 1 with `REDIS_CLUSTER=true`, else 0. Replication is asynchronous: without a replica's copy an acknowledged event can vanish when its primary fails."
        ) { text throws(ConfigurationKey.Unreadable) in
            if text == "auto" { return .automatic }
            guard let count = Int(text), range.contains(count) else {
                throw ConfigurationKey.Unreadable("must be auto or an integer in \(range), got \(text)")
            }
            return .replicas(count)
        }
    }
}

extension ConfigurationKey.Typed where Value == Milliseconds {
    public static var ingestWaitTimeoutMilliseconds: Self {
        .milliseconds(
            "INGEST_WAIT_TIMEOUT_MS", default: 1_000, range: 1...60_000, services: ["ingest"],
            "How long ingest waits for `INGEST_WAIT_REPLICAS` replicas; past it the answer is 503 `replication-timeout` (the event is written, not yet safe: retry with the same Idempotency-Key)."
        )
    }
}

extension ConfigurationKey.Typed where Value == Milliseconds {
    public static var crowdCacheMilliseconds: Self {
        .milliseconds(
            "CROWD_CACHE_MS", default: 1_000, range: 0...60_000, services: ["scheduler"],
            "How long a crowd's count (summed over every partition) is reused before it is read again; the scheduler adds what it commits itself. A count read or reused this way decides a tier only once the crowd has reached the top threshold, where more conversions cannot change it; below it Redis counts and ranks each conversion itself, so every tier is exact whatever the number of replicas and consumer loops. 0 reads every time."
        )
    }

    public static var registryCacheMilliseconds: Self {
        .milliseconds(
            "REGISTRY_CACHE_MS", default: 60_000, range: 0...3_600_000, services: ["verifier", "scheduler", "dispatcher"],
            "How long a registry entry (ad network, app, current schema) a stage read is reused at most. Every admin write raises the registry's version, which each batch reads, so a change is seen by the next batch anyway; this bounds only a change made in Redis by hand. 0 reads every time."
        )
    }
}

extension ConfigurationKey.Typed where Value == String {
    public static var publicSuffixList: Self {
        .text(
            "PUBLIC_SUFFIX_LIST", type: "path", default: PublicSuffixListFile.debianPath, services: ["admin", "dispatcher"],
            "The Public Suffix List (publicsuffix.org's `public_suffix_list.dat` format) that decides a copy endpoint's registrable domain: Debian's `publicsuffix` package by default. To update it, upgrade that package or download https://publicsuffix.org/list/public_suffix_list.dat and point this at it; restart ingest and the dispatcher."
        )
    }
}
