import AttributionModel
import RedisStreams

// Every Redis name the pipeline uses, built here and only here: streams, consumer groups (with their
// attempt counts and dead letters), delayed queues, and every key shape. Services, device erasure,
// the status view, the ledger and the snapshot gauges all build names through these, so a key's shape
// changes in one place (docs/architecture.md lists them with their owners).

/// The streams of the one linear path (docs/architecture.md draws them).
public enum StreamNames {
    /// ingest → verifier
    public static let events = "events"
    /// verifier → attribution-winner
    public static let verified = "verified"
    /// refusals, with reason codes (verifier; attribution-winner for conversions it does not attribute)
    public static let rejected = "rejected"
    /// attribution-winner's own conversions once their settle time passed, released by its delayed queue
    public static let conversionsSettled = "winner:settled"
    /// attribution-winner → scheduler
    public static let attributions = "attributions"
    /// the scheduler's own window timers, released by its delayed queue
    public static let schedulerTimers = "scheduler:timers"
    /// scheduler (held postbacks, when due) and dispatcher retries → dispatcher
    public static let postbacks = "postbacks"
    /// postbacks that exhausted their retries
    public static let deliveriesDead = "deliveries:dead"
}

/// A stage's consumer group: the streams it reads, its failure counts and its dead letters.
public struct ConsumerGroup: Sendable, Hashable {
    public let name: String
    public let streams: [String]
    /// HASH entry id → failed attempts (`StreamConsumer.attemptsKey` builds the same name).
    public var attemptsKey: String { "\(name):attempts" }
    /// Entries that ran out of attempts, with their error (`StageWorkerConfiguration` defaults to it).
    public var deadLetterStream: String { "\(name):dead" }
}

public enum ConsumerGroups {
    public static let verifier = ConsumerGroup(name: "verifier", streams: [StreamNames.events])
    public static let attributionWinner = ConsumerGroup(
        name: "attribution-winner", streams: [StreamNames.verified, StreamNames.conversionsSettled])
    public static let scheduler = ConsumerGroup(
        name: "scheduler", streams: [StreamNames.attributions, StreamNames.schedulerTimers])
    public static let dispatcher = ConsumerGroup(name: "dispatcher", streams: [StreamNames.postbacks])
    public static let all = [verifier, attributionWinner, scheduler, dispatcher]
}

/// The delayed queues: a sorted set of due times (plus a hash of messages), moved atomically into a stream.
public enum DelayedQueues {
    /// conversions waiting out the settle time, released into `winner:settled`
    public static let settlingConversions = DelayedQueue(name: "winner:settling", target: StreamNames.conversionsSettled)
    /// window ends (and kept plans' last releases), released into `scheduler:timers`
    public static let windowTimers = DelayedQueue(name: "scheduler:windows", target: StreamNames.schedulerTimers)
    /// Held postbacks of one window (0, 1, 2), released into `postbacks` when their random delay ends.
    /// Compact: millions may wait here for days, each one binary sorted-set member; one queue per
    /// window, so `ZCARD` tells operators how many are held for each.
    public static let heldPostbacks = (0..<ConversionWindows.count).map { window in
        DelayedQueue(name: "scheduler:held:w\(window)", target: StreamNames.postbacks, layout: .compact)
    }
    /// failed deliveries, released into `postbacks` when their retry is due
    public static let deliveryRetries = DelayedQueue(name: "dispatcher:retries", target: StreamNames.postbacks)
    public static let all = [settlingConversions, windowTimers] + heldPostbacks + [deliveryRetries]
}

/// Registry keys: written by ingest's admin API (their owner), read by the verifier and dispatcher.
public enum RegistryKeys {
    /// HASH ad network id → `AdNetworkRegistration` JSON
    public static let adNetworks = "registry:ad-networks"
    /// HASH item id → `PublisherAppConfiguration` JSON
    public static let publisherApps = "registry:publisher-apps"
    /// HASH item id → `AdvertisedAppConfiguration` JSON
    public static let advertisedApps = "registry:advertised-apps"
    /// HASH item id → the app's current `ConversionValueSchema` JSON (with its version)
    public static let currentSchemas = "registry:schemas:current"
    /// HASH `<item id>:<version>` → every `ConversionValueSchema` an app ever had
    public static let schemaVersions = "registry:schemas:versions"
    /// `schemaVersions`' field for one version of an app's schema.
    public static func schemaVersionField(app: ItemIdentifier, version: Int) -> String { "\(app):\(version)" }
    /// `schemaVersions`' counter of an app's latest version.
    public static func latestSchemaVersionField(app: ItemIdentifier) -> String { "\(app):latest" }
    /// HASH SHA-256 of an app key → the advertised app's item id (keys themselves are never stored)
    public static let appKeys = "registry:app-keys"
    /// HASH kid → public JWK JSON: the dispatcher publishes its keys here, ingest serves them.
    public static let jwks = "registry:jwks"
    /// HASH kid → ms when a dispatcher last said it signs with that key (every minute or sooner). A key
    /// no dispatcher uses any more stays in the served JWKS for `SIGNING_KEY_GRACE_HOURS` after that.
    public static let jwksSeen = "registry:jwks:seen"
}

/// Recent refusals, kept by the verifier (their owner) so an ad network or app team can ask ingest's
/// admin API why its inputs were refused: capped lists of `Rejection` JSON, newest first.
public enum RejectionLog {
    public static let capacity = 100
    public static func networkKey(_ network: String) -> String { "verifier:rejections:network:\(network)" }
    public static func appKey(_ item: String) -> String { "verifier:rejections:app:\(item)" }
    public static func key(_ log: VerifierStep.RefusalLog) -> String {
        switch log {
        case .network(let network): networkKey(network)
        case .app(let item): appKey(String(item))
        }
    }
}

/// Keys that embed a device identifier: every one is built here, and device erasure scans by the same shapes.
public enum DeviceKeys {
    /// attribution-winner's pool, conversions and pending reports per device and advertised app.
    public static func winnerState(_ scope: WinnerStep.Scope) -> String { "winner:device:\(scope.app):\(scope.device)" }
    /// attribution-winner's re-engagement history of a device across apps (yearly cap).
    public static func winnerReengagements(device: String) -> String { "winner:reengagements:\(device)" }
    /// The verifier's recent views of one network's ads for one app on a device (one open view): a
    /// sorted set of "begin:end" by end.
    public static func verifierViews(_ scope: VerifierStep.ViewScope) -> String {
        "verifier:views:\(scope.app):\(scope.network):\(scope.device)"
    }
    /// ingest's idempotency records of impressions, scoped per device.
    public static func impressionIdempotency(device: String, key: String) -> String {
        StageKeys.idempotency(route: "impressions", scope: device, key: key)
    }

    /// SCAN patterns matching every key above for one device (the identifier glob-escaped).
    public static func patterns(device: String) -> [String] {
        let escaped = String(device.flatMap { "*?[]\\".contains($0) ? ["\\", $0] : [$0] })
        return [
            "winner:device:*:\(escaped)",
            winnerReengagements(device: escaped),
            "verifier:views:*:*:\(escaped)",
            impressionIdempotency(device: escaped, key: "*"),
        ]
    }
}

/// The stages' other keys, by owner.
public enum StageKeys {
    /// verifier: one impression may be used once; its id is remembered while it could be fresh.
    public static func replayMarker(impression: String) -> String { "verifier:seen:\(impression)" }
    /// ingest: the first answer to an `Idempotency-Key` of one caller (`scope`: the app, or the device
    /// for impressions) on one route.
    public static func idempotency(route: String, scope: String, key: String) -> String {
        "ingest:idempotency:\(route):\(scope):\(key)"
    }
    /// scheduler: a conversion's postback plan (or the `finished` marker).
    public static func plan(conversion: String) -> String { "scheduler:plan:\(conversion)" }
    /// What a finished plan's key holds instead of the plan.
    public static let finishedPlanMarker = Array("finished".utf8)
    /// scheduler: one crowd's counter, a hash of day → conversions that day.
    public static func crowd(_ crowd: Crowd) -> String {
        switch crowd {
        case .publisherApp(let item): "scheduler:crowd:publisher:\(item)"
        case .advertisedApp(let item): "scheduler:crowd:advertised:\(item)"
        case .country(let code): "scheduler:crowd:country:\(code)"
        case .source(let app, let network, let truncated): "scheduler:crowd:source:\(app):\(network):\(truncated)"
        }
    }
    /// dispatcher: HASH of delivered, failed-attempts and dead-lettered counts.
    public static let dispatcherStats = "dispatcher:stats"
}
