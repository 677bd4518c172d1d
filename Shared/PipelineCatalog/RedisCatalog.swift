import AttributionModel
import RedisStreams

// Every Redis name the pipeline uses, built here and only here: streams, consumer groups (with their
// attempt counts and dead letters), delayed queues, and every key shape. Services, device erasure,
// the status view, the ledger and the snapshot gauges all build names through these, so a key's shape
// changes in one place (docs/reference/redis-keys.md lists them with their owners).

/// A name that exists once per partition: `<base>:{pNN}`, the partition's hash tag last.
public struct PartitionedName: Sendable, Hashable, CustomStringConvertible {
    public let base: String
    public init(_ base: String) { self.base = base }
    /// The name in one partition.
    public func callAsFunction(_ partition: Partition) -> String { "\(base):\(partition.tag)" }
    /// The name in every partition, by index.
    public func all(_ partitioning: Partitioning) -> [String] { partitioning.partitions.map(callAsFunction) }
    public var description: String { base }
}

/// The streams of the one linear path (docs/architecture.md draws them), each once per partition.
public enum StreamNames {
    /// ingest → verifier
    public static let events = PartitionedName("events")
    /// verifier → attribution-winner
    public static let verified = PartitionedName("verified")
    /// refusals, with reason codes (verifier; attribution-winner for conversions it does not attribute)
    public static let rejected = PartitionedName("rejected")
    /// attribution-winner's own conversions once their settle time passed, released by its delayed queue
    public static let conversionsSettled = PartitionedName("winner:settled")
    /// attribution-winner → scheduler
    public static let attributions = PartitionedName("attributions")
    /// the scheduler's own window timers, released by its delayed queue
    public static let schedulerTimers = PartitionedName("scheduler:timers")
    /// scheduler (held postbacks, when due) and dispatcher retries → dispatcher
    public static let postbacks = PartitionedName("postbacks")
    /// postbacks that exhausted their retries
    public static let deliveriesDead = PartitionedName("deliveries:dead")
}

/// A stage's consumer group: the streams it reads, its failure counts and its dead letters, per partition.
public struct ConsumerGroup: Sendable, Hashable {
    public let name: String
    public let streams: [PartitionedName]
    /// HASH entry id → failed attempts, per partition.
    public var attempts: PartitionedName { PartitionedName("\(name):attempts") }
    /// Entries that ran out of attempts, with their error, per partition.
    public var deadLetterStream: PartitionedName { PartitionedName("\(name):dead") }

    /// What a worker reading `stream` needs for every partition.
    public func partitions(of stream: PartitionedName, _ partitioning: Partitioning) -> [StreamPartition] {
        partitioning.partitions.map {
            StreamPartition(stream: stream($0), attemptsKey: attempts($0), deadLetterStream: deadLetterStream($0))
        }
    }
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

/// A delayed queue that exists once per partition, releasing into the same partition's stream.
public struct PartitionedQueue: Sendable, Hashable {
    public let name: String
    public let target: PartitionedName
    public let layout: DelayedQueue.Layout
    /// The held postbacks' queues: binary members (`CompactHeldPostback`, storage private to the
    /// scheduler) released into `postbacks` as `postback.due` JSON messages.
    public let holdsPostbacks: Bool

    init(_ name: String, target: PartitionedName, layout: DelayedQueue.Layout = .hashed, holdsPostbacks: Bool = false) {
        self.name = name
        self.target = target
        self.layout = layout
        self.holdsPostbacks = holdsPostbacks
    }

    /// The queue of one partition: keys `<name>:{pNN}:due` (and `:items`).
    public func callAsFunction(_ partition: Partition) -> DelayedQueue {
        DelayedQueue(
            name: "\(name):\(partition.tag)", target: target(partition), layout: layout,
            releasedAs: holdsPostbacks ? Self.releasedPostback : nil)
    }

    /// A held postback's member as the `postback.due` JSON message it becomes in `postbacks`.
    public static let releasedPostback: @Sendable ([UInt8]) -> [UInt8]? = { member in
        try? Envelope.released(member).encoded()
    }

    /// The queue of every partition, by index.
    public func all(_ partitioning: Partitioning) -> [DelayedQueue] { partitioning.partitions.map(callAsFunction) }
}

/// The delayed queues: a sorted set of due times (plus a hash of messages), moved atomically into a stream.
public enum DelayedQueues {
    /// conversions waiting out the settle time, released into `winner:settled`
    public static let settlingConversions = PartitionedQueue("winner:settling", target: StreamNames.conversionsSettled)
    /// window ends (and kept plans' last releases), released into `scheduler:timers`
    public static let windowTimers = PartitionedQueue("scheduler:windows", target: StreamNames.schedulerTimers)
    /// Held postbacks of one window (0, 1, 2), released into `postbacks` when their random delay ends.
    /// Compact: millions may wait here for days, each one binary sorted-set member, released as a JSON
    /// message; one queue per window, so `ZCARD` tells operators how many are held for each.
    public static let heldPostbacks = (0..<ConversionWindows.count).map { window in
        PartitionedQueue("scheduler:held:w\(window)", target: StreamNames.postbacks, layout: .compact, holdsPostbacks: true)
    }
    /// failed deliveries, released into `postbacks` when their retry is due
    public static let deliveryRetries = PartitionedQueue("dispatcher:retries", target: StreamNames.postbacks)
    public static let all = [settlingConversions, windowTimers] + heldPostbacks + [deliveryRetries]
}

/// Registry keys: written by the admin service (their owner), read by the verifier and dispatcher
/// outside their stage transactions. All under one hash tag, so the admin API's transactions over
/// several of them stay in one slot.
public enum RegistryKeys {
    /// The hash tag every registry key carries.
    public static let tag = "{registry}"
    /// STRING: the deployment's partition count, recorded by the first service to start.
    public static let partitions = "registry:\(tag):partitions"
    /// STRING counter: raised after every write to a hash the stages cache (`RegistryCache`).
    public static let version = "registry:\(tag):version"
    /// HASH ad network id → `AdNetworkRegistration` JSON
    public static let adNetworks = "registry:\(tag):ad-networks"
    /// HASH item id → `PublisherAppConfiguration` JSON
    public static let publisherApps = "registry:\(tag):publisher-apps"
    /// HASH item id → `AdvertisedAppConfiguration` JSON
    public static let advertisedApps = "registry:\(tag):advertised-apps"
    /// HASH item id → the app's current `ConversionValueSchema` JSON (with its version)
    public static let currentSchemas = "registry:\(tag):schemas:current"
    /// HASH `<item id>:<version>` → every `ConversionValueSchema` an app ever had
    public static let schemaVersions = "registry:\(tag):schemas:versions"
    /// `schemaVersions`' field for one version of an app's schema.
    public static func schemaVersionField(app: ItemIdentifier, version: Int) -> String { "\(app):\(version)" }
    /// `schemaVersions`' counter of an app's latest version.
    public static func latestSchemaVersionField(app: ItemIdentifier) -> String { "\(app):latest" }
    /// HASH SHA-256 of an app key → the advertised app's item id (keys themselves are never stored)
    public static let appKeys = "registry:\(tag):app-keys"
    /// HASH SHA-256 of an app key → when it was issued (ms): what listing an app's keys shows.
    public static let appKeysIssued = "registry:\(tag):app-keys:issued"
    /// HASH SHA-256 of an ad network's read-only credential → the network's id (credentials themselves
    /// are never stored)
    public static let networkCredentials = "registry:\(tag):network-credentials"
    /// HASH SHA-256 of a network credential → when it was issued (ms).
    public static let networkCredentialsIssued = "registry:\(tag):network-credentials:issued"
    /// HASH kid → public JWK JSON: the dispatcher publishes its keys here, ingest serves them.
    public static let jwks = "registry:\(tag):jwks"
    /// HASH kid → ms when a dispatcher last said it signs with that key (every minute or sooner). A key
    /// no dispatcher uses any more stays in the served JWKS for `SIGNING_KEY_GRACE_HOURS` after that.
    public static let jwksSeen = "registry:\(tag):jwks:seen"
}

/// Recent refusals, kept by the verifier (their owner) so an ad network or app team can ask ingest's
/// admin API why its inputs were refused: capped lists of `Rejection` JSON, newest first.
public enum RejectionLog {
    public static let capacity = 100
    public static func networkKey(_ network: String) -> String { "verifier:rejections:network:\(network)" }
    public static func appKey(_ item: String) -> String { "verifier:rejections:app:\(item)" }
    /// The refusals naming a registered network whose signature did not verify (anyone can send them).
    public static func unsignedKey(_ network: String) -> String { "verifier:rejections:unsigned:\(network)" }
    /// HASH registered network id → how many such refusals: one field per registered network.
    public static let unsignedCounts = "verifier:rejections:unsigned-counts"
    /// Adds a refusal to its list (newest first, capped, kept 30 days from the last one), and counts an
    /// unsigned one: written after the stage's commit, outside its partition.
    public static func append(_ rejection: Rejection, to log: VerifierStep.RefusalLog?) -> [RedisCommand] {
        guard let log, let json = try? JSONCoding.encoder.encode(rejection) else { return [] }
        var counted: [RedisCommand] = []
        if case .unsigned(let network) = log { counted = [RedisCommand("HINCRBY", unsignedCounts, network, "1")] }
        let key = key(log)
        return [
            RedisCommand(bytes: [Array("LPUSH".utf8), Array(key.utf8), Array(json)]),
            RedisCommand("LTRIM", key, "0", String(capacity - 1)),
            RedisCommand("PEXPIRE", key, String(Retention.rejectionLog)),
        ] + counted
    }

    public static func key(_ log: VerifierStep.RefusalLog) -> String {
        switch log {
        case .network(let network): networkKey(network)
        case .unsigned(let network): unsignedKey(network)
        case .app(let item): appKey(String(item))
        }
    }
}

/// Keys that embed a device identifier: every one is built here, in the device's partition, and device
/// erasure deletes by the same shapes. The identifier is always the last component of the name or
/// followed by `:`, written by `component` (`%` and `:` percent-encoded), so a pattern ending in a
/// device's component matches that device's keys only, whatever `:` other identifiers hold. (Ids with
/// `:` or `%` were written raw before: such a device's older keys keep their names until they expire.)
public enum DeviceKeys {
    /// attribution-winner's pool, conversions and pending reports per device and advertised app.
    public static func winnerState(_ scope: WinnerStep.Scope, in partition: Partition) -> String {
        "winner:device:\(partition.tag):\(scope.app):\(component(scope.device))"
    }
    /// attribution-winner's re-engagement history of a device across apps (yearly cap).
    public static func winnerReengagements(device: String, in partition: Partition) -> String {
        "winner:reengagements:\(partition.tag):\(component(device))"
    }
    /// The verifier's recent views of one network's ads for one app on a device (one open view): a
    /// sorted set of "begin:end" by end.
    public static func verifierViews(_ scope: VerifierStep.ViewScope, in partition: Partition) -> String {
        "verifier:views:\(partition.tag):\(scope.app):\(scope.network):\(component(scope.device))"
    }
    /// ingest's idempotency record of one key of one caller (the advertised app's item id, or
    /// `kid=<ad network>` for impressions, which are authenticated by their signature) for one device on
    /// one route. The device is part of its scope so that the record sits in the device's partition,
    /// checked and written atomically with the event it answers for.
    public static func idempotency(
        device: String, route: String, caller: String, key: String, in partition: Partition
    ) -> String {
        "ingest:idempotency:\(partition.tag):\(component(device)):\(route):\(component(caller)):\(component(key))"
    }

    /// A name component with `%` and `:` percent-encoded, so that `:` only ever separates components:
    /// device `a:b` with key `c` and device `a` with key `b:c` are different records.
    static func component(_ text: String) -> String {
        guard text.contains(where: { $0 == ":" || $0 == "%" }) else { return text }
        return text.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: ":", with: "%3A")
    }

    /// SCAN patterns matching every key above for one device (the identifier glob-escaped), in its partition.
    public static func patterns(device: String, in partition: Partition) -> [String] {
        func globEscaped(_ text: String) -> String { String(text.flatMap { "*?[]\\".contains($0) ? ["\\", $0] : [$0] }) }
        let escaped = globEscaped(component(device))
        // The tag as is: braces are not glob characters, and a pattern holding the partition's hash tag
        // is routed (SCAN) to the node serving that partition on Redis Cluster.
        let tag = partition.tag
        return [
            "winner:device:\(tag):*:\(escaped)",
            "winner:reengagements:\(tag):\(escaped)",
            "verifier:views:\(tag):*:*:\(escaped)",
            "ingest:idempotency:\(tag):\(escaped):*",
        ]
    }
}

/// The stages' other keys, by owner; each in one partition.
public enum StageKeys {
    /// verifier: one impression may be used once, whatever the device that reports it; its id is
    /// remembered while it could be fresh, in the partition of the impression id (not of the device):
    /// claimed with SET NX outside the device's transaction (see `VerifierStage`).
    public static func replayMarker(impression: String, _ partitioning: Partitioning) -> String {
        "verifier:seen:\(partitioning.of(key: impression).tag):\(impression)"
    }
    /// attribution-winner: a re-engagement's outcome (`ConversionOutcome.recorded`) for a minute, under
    /// its conversion tag in its device's partition, read by ingest for a request that waits for it.
    public static func reengagementOutcome(conversionTag: String, in partition: Partition) -> String {
        "winner:outcomes:\(partition.tag):\(conversionTag)"
    }
    /// scheduler: the key of the keyed hash behind every `postback-identifier` (`PostbackIdentifiers`):
    /// 32 random bytes in hex, written once by the first scheduler to start, never expiring.
    public static let postbackIdentifierKey = "scheduler:postback-identifier-key"
    /// scheduler: a conversion's postback plan (or the `finished` marker), in its device's partition.
    public static func plan(conversion: String, in partition: Partition) -> String {
        "scheduler:plan:\(partition.tag):\(conversion)"
    }
    /// scheduler: the `finished` marker beside a plan, written with a new plan (and again when the plan's
    /// expiry moves): the plan's key expires (`Retention.plan`), this one outlives it by
    /// `Retention.finishedMarker`.
    public static func finishedPlan(conversion: String, in partition: Partition) -> String {
        "scheduler:finished:\(partition.tag):\(conversion)"
    }
    /// What a finished plan's key holds instead of the plan.
    public static let finishedPlanMarker = Array("finished".utf8)
    /// scheduler: a crowd's counter, a hash of day → conversions that day. On Redis Cluster each
    /// partition keeps its own shard (`shard`: the partition, in its slot, written in the partition's
    /// transaction) and a tier is assessed from the sum of every shard; on one Redis, where a
    /// transaction may span slots, the crowd is one counter (`shard` nil), read with one command.
    /// Below the top threshold a crowd's counter (on a cluster, the first partition's shard) also holds
    /// `c:<conversion>` → `<rank>:<hour>` for the conversions it ranked in the last hour or two
    /// (`CrowdRanks` in the scheduler); readers of day counts skip those fields.
    public static func crowd(_ crowd: Crowd, shard: Partition?) -> String {
        let prefix = shard.map { "scheduler:crowd:\($0.tag)" } ?? "scheduler:crowd"
        return switch crowd {
        case .publisherApp(let item): "\(prefix):publisher:\(item)"
        case .advertisedApp(let item): "\(prefix):advertised:\(item)"
        case .country(let code): "\(prefix):country:\(code)"
        case .source(let app, let network, let truncated): "\(prefix):source:\(app):\(network):\(truncated)"
        }
    }
    /// dispatcher: HASH of delivered, failed-attempts, deferred (held back by a destination's lane) and
    /// dead-lettered counts, per partition.
    public static let dispatcherStats = PartitionedName("dispatcher:stats")
    /// dispatcher: HASH of replica (consumer name) → its open circuits (`OpenCircuits` JSON), rewritten
    /// every few seconds by each replica, read by `attribution status` and the gauges.
    public static let dispatcherCircuits = "dispatcher:circuits"
}
