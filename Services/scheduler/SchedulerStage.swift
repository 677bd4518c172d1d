import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// One batch: look up the crowd counters (every partition's shard) and the app's current schema for
/// new attributions, WATCH and GET the plans it touches (in their partition), run the model's
/// `SchedulerStep` per message, then write the plans, window timers, held postbacks and the crowd
/// counts of the batch's partition, and acknowledge, in one transaction.
///
/// Crowd counts are read unWATCHed (a crowd read within `CROWD_CACHE_MS` comes from `CrowdCache`
/// instead): a count read that way misses what other loops and replicas are counting meanwhile, so it
/// decides a tier only for a crowd that has reached the top threshold. The batch's new conversions in
/// any other crowd are counted and ranked by Redis itself before the transaction (`CrowdRanks`), so
/// each tier is the exact one.
struct SchedulerStage: StreamStage {
    let step: SchedulerStep
    let partitioning: Partitioning
    let crowdCache: CrowdCache
    let crowdRanks: CrowdRanks
    let crowdUpkeeps = CrowdUpkeeps()
    /// Redis Cluster: crowd counters are per-partition shards, summed when a tier is assessed. On one
    /// Redis, one counter per crowd (see `StageKeys.crowd(_:shard:)`).
    let shardsCrowds: Bool
    /// The apps' current schemas (a new plan pins its app's), read outside the transaction.
    let registryCache: RegistryCache
    let clock: @Sendable () -> Milliseconds

    struct Batch: Sendable {
        var envelopes: [Envelope?] = []
        var partitions: [Partition] = []
        var conversions: [(id: String, partition: Partition)] = []  // plans to read, first-seen order
        var crowds: [Crowd] = []  // crowd counters the batch needs
        var fetch: [Crowd] = []  // those to read from Redis (the rest come from the cache)
        let pending = PendingIncrements()
        var schemaApps: [ItemIdentifier] = []  // advertised apps whose current schema a new plan pins
        var schemas: RegistryReads
    }

    func prepare(_ entries: [StreamEntry]) -> Batch {
        var batch = Batch(schemas: RegistryReads(registryCache, []))
        var seenConversions = Set<String>()
        var seenCrowds = Set<Crowd>()
        var seenApps = Set<ItemIdentifier>()
        for entry in entries {
            let envelope = try? Envelope.decode(entry.message)
            let partition = partitioning[entry.partition]
            batch.envelopes.append(envelope)
            batch.partitions.append(partition)
            guard let envelope, let id = SchedulerStep.conversionIdentifier(of: envelope) else { continue }
            if seenConversions.insert(id).inserted { batch.conversions.append((id, partition)) }
            guard case .conversionAttributed(let attribution) = envelope.body else { continue }
            batch.crowds += Crowd.all(for: attribution).filter { seenCrowds.insert($0).inserted }
            if seenApps.insert(attribution.advertisedItemIdentifier).inserted {
                batch.schemaApps.append(attribution.advertisedItemIdentifier)
            }
        }
        // On Redis Cluster a crowd to rank needs its shards as they are now (`CrowdRanks` adds the others
        // to the first partition's shard's count), so a cached one below the top threshold is read again.
        batch.fetch = crowdCache.stale(batch.crowds, orBelow: shardsCrowds ? step.thresholds.tier3 : nil)
        batch.schemas = RegistryReads(registryCache, [.init(RegistryKeys.currentSchemas, batch.schemaApps.map(String.init))])
        return batch
    }

    func reads(for batch: Batch) -> StageReads {
        let plans = batch.conversions.map { StageKeys.plan(conversion: $0.id, in: $0.partition) }
        // The registry's lookups first (`RegistryReads` takes them from the front), then the crowds.
        let lookups =
            batch.schemas.commands() + batch.fetch.flatMap { crowd in shardsOf(crowd).map { RedisCommand("HGETALL", $0) } }
        // A plan's key, or beside it the marker of a kept plan that expired (written with it, so WATCHing the plan is enough).
        let reads = batch.conversions.map {
            RedisCommand(
                "MGET", StageKeys.plan(conversion: $0.id, in: $0.partition),
                StageKeys.finishedPlan(conversion: $0.id, in: $0.partition))
        }
        return StageReads(watch: plans, commands: reads, lookups: lookups)
    }

    func lookupsCurrent(_ batch: Batch, lookups: [RedisReply]) -> Bool {
        batch.schemas.resolve(lookups[...])
    }

    func decide(_ batch: Batch, state: [RedisReply]) async throws -> [StageOutcome] {
        var replies = state.dropFirst(batch.schemas.count)
        var fetched: [Crowd: [Int64: Int]] = [:]
        var otherShards: [Crowd: [Int64: Int]] = [:]  // Redis Cluster: every shard's but `crowdRanks.home`'s
        let repliesPerCrowd = shardsCrowds ? partitioning.count : 1
        let home = crowdRanks.home.index
        for crowd in batch.fetch {
            // The crowd's count per day: the sum of every partition's shard.
            fetched[crowd] = [:]
            for (shard, reply) in zip(0..., replies.prefix(repliesPerCrowd)) {
                let buckets = Self.dayBuckets(reply)
                fetched[crowd]?.merge(buckets, uniquingKeysWith: +)
                if shardsCrowds, shard != home { otherShards[crowd, default: [:]].merge(buckets, uniquingKeysWith: +) }
            }
            replies = replies.dropFirst(repliesPerCrowd)
        }
        crowdCache.store(fetched)
        let counters = crowdCache.counts(batch.crowds.filter { fetched[$0] == nil }).merging(fetched) { $1 }
        let schemas = batch.schemas.replies.first?.decodedFields(batch.schemaApps, as: ConversionValueSchema.self) ?? [:]
        var plans: [String: SchedulerStep.PlanState] = [:]
        var unreadablePlans = Set<String>()
        for (conversion, reply) in zip(batch.conversions, replies) {
            if let plan = Self.planState(reply) { plans[conversion.id] = plan } else { unreadablePlans.insert(conversion.id) }
        }
        let ranking = CrowdRanking.requests(
            for: Self.newAttributions(batch.envelopes, plans: plans), read: counters, thresholds: step.thresholds,
            policy: step.policy)
        // Redis failing here is not the entries' fault: thrown, the batch is retried whole.
        var crowd = CrowdCounts(read: counters, ranked: try await crowdRanks.rank(ranking, otherShards: otherShards))
        let now = clock()
        var increments: [CrowdIncrement] = []
        var upkeep: [String: CrowdUpkeep] = [:]  // the counters' upkeep this attempt writes
        let decidedAt = ContinuousClock.now
        defer {
            batch.pending.decidedAt.withLock { $0 = decidedAt }
            batch.pending.increments.withLock { $0 = increments }
            batch.pending.upkeep.withLock { $0 = upkeep }
        }

        var upkeepCommands: [RedisCommand] = []
        var outcomes = zip(batch.envelopes, batch.partitions).map { envelope, partition -> StageOutcome in
            if let envelope, case .testPostbacksRequested(let request) = envelope.body {
                // Due now, straight to the dispatcher: no plan, no crowd, no delay.
                return StageOutcome.encoding(counts: [StageCount(.testPostbacks)]) {
                    try TestPostbacks.orders(request).map { order in
                        StreamCommands.add(
                            StreamNames.postbacks(partition),
                            message: try Envelope(id: order.payload.postbackIdentifier, time: now, body: .postbackDue(order))
                                .encoded())
                    }
                }
            }
            guard let envelope, let id = SchedulerStep.conversionIdentifier(of: envelope) else {
                return .failed("scheduler takes attributions, attributed updates and window timers")
            }
            // A plan that cannot be read fails its conversion's messages (dead letters, with the reason)
            // rather than being taken for absent, which would start the conversion's postbacks afresh.
            guard !unreadablePlans.contains(id) else { return .failed("the conversion's postback plan in Redis cannot be read") }
            var schema: ConversionValueSchema?
            if case .conversionAttributed(let attribution) = envelope.body {
                schema = schemas[attribution.advertisedItemIdentifier]
            }
            switch step.step(
                plans[id] ?? .absent, message: envelope, crowd: &crowd, schema: schema, now: now)
            {
            case .retry(let reason):
                return .failed(reason)
            case .done(let effects):
                if let stored = effects.store { plans[id] = stored }
                if let increment = effects.crowd { increments.append(increment) }
                return StageOutcome.encoding(counts: effects.counts.map(StageCount.init)) {
                    try commands(
                        for: effects, conversion: id, in: partition, now: now, known: counters, upkeep: &upkeep,
                        upkeepCommands: &upkeepCommands)
                }
            }
        }
        // The counters' trims and expiries after every increment of the batch (they never touch the day
        // being counted), so `WriteCoalescing` merges each counter's commands: one HINCRBY per day, then
        // one HDEL and one PEXPIRE when due.
        if !upkeepCommands.isEmpty, let last = outcomes.lastIndex(where: \.isWrite),
            case .write(let commands, let counts, let after) = outcomes[last]
        {
            outcomes[last] = .write(commands + upkeepCommands, counts: counts, after: after)
        }
        return outcomes
    }

    /// The batch's attributions that no plan has yet, in batch order: the conversions it counts.
    static func newAttributions(_ envelopes: [Envelope?], plans: [String: SchedulerStep.PlanState]) -> [Attribution] {
        envelopes.compactMap { envelope in
            guard case .conversionAttributed(let attribution)? = envelope?.body,
                (plans[attribution.conversionIdentifier] ?? .absent) == .absent
            else { return nil }
            return attribution
        }
    }

    /// The keys a crowd's count is the sum of: every partition's shard, or the one counter.
    func shardsOf(_ crowd: Crowd) -> [String] {
        shardsCrowds ? partitioning.partitions.map { StageKeys.crowd(crowd, shard: $0) } : [StageKeys.crowd(crowd, shard: nil)]
    }

    /// The batch committed: its crowd increments are now in Redis, so in the cache too.
    func committed(_ batch: Batch) {
        crowdCache.apply(batch.pending.increments.withLock { $0 }, decidedAt: batch.pending.decidedAt.withLock { $0 })
        crowdUpkeeps.committed(batch.pending.upkeep.withLock { $0 })
    }

    /// The step's effects as Redis commands: plan (or marker), crowd counts, timers, held postbacks.
    /// A crowd counter is trimmed and its expiry extended only when its upkeep says so (`CrowdUpkeep`);
    /// those commands go to `upkeepCommands`, written after the batch's increments.
    func commands(
        for effects: SchedulerStep.Effects, conversion id: String, in partition: Partition, now: Milliseconds,
        known: [Crowd: [Int64: Int]], upkeep: inout [String: CrowdUpkeep], upkeepCommands: inout [RedisCommand]
    ) throws -> [RedisCommand] {
        var commands: [RedisCommand] = []
        if let increment = effects.crowd {
            for crowd in increment.crowds {
                let key = StageKeys.crowd(crowd, shard: shardsCrowds ? partition : nil)
                let last = upkeep[key] ?? crowdUpkeeps[key]
                let (trim, expire) = last.needs(increment, now: now, known: known[crowd])
                commands.append(RedisCommand("HINCRBY", key, String(increment.day), "1"))
                if !trim.isEmpty { upkeepCommands.append(RedisCommand(["HDEL", key] + trim.map(String.init))) }
                if expire { upkeepCommands.append(RedisCommand("PEXPIRE", key, String(increment.keepFor))) }
                upkeep[key] = last.after(increment, now: now, trimmed: !trim.isEmpty, expired: expire)
            }
        }
        for timer in effects.timers {
            commands += DelayedQueues.windowTimers(partition).schedule(
                id: timer.identifier, dueAtMilliseconds: timer.dueAt, message: try timer.message.encoded())
        }
        let key = StageKeys.plan(conversion: id, in: partition)
        switch effects.store {
        case .plan(let plan)?:
            // No timer wakes a plan to end it: its key expires, and the marker beside it outlives it.
            commands.append(.set(key, Self.stored(plan), expiringAfter: max(1, (effects.expiresAt ?? now) - now)))
            if let marker = effects.markerExpiresAt {
                commands.append(
                    .set(
                        StageKeys.finishedPlan(conversion: id, in: partition), StageKeys.finishedPlanMarker,
                        expiringAfter: max(1, marker - now)))
            }
        case .finished?:
            commands.append(
                .set(key, StageKeys.finishedPlanMarker, expiringAfter: Retention.finishedMarker(step.policy)))
        case .absent?, nil:
            break
        }
        for postback in effects.held {
            let queue = DelayedQueues.heldPostbacks[postback.order.payload.postbackSequenceIndex](partition)
            let message = CompactHeldPostback.encode(postback.order, dueAt: postback.dueAt)
            if let old = postback.replacing {
                commands += queue.replace(
                    CompactHeldPostback.encode(old.order, dueAt: old.dueAt), with: message, dueAtMilliseconds: postback.dueAt)
            } else {
                commands += queue.schedule(
                    id: postback.order.payload.postbackIdentifier, dueAtMilliseconds: postback.dueAt, message: message)
            }
        }
        return commands
    }

    /// A plan as stored: compact binary, not JSON, since it is read and written on every message of its
    /// conversion.
    static func stored(_ plan: PostbackPlan) -> [UInt8] { CompactCoding.encode(plan) }

    /// A plan's MGET: its key (a plan or the marker), then the kept plan's marker; nil for a plan that
    /// cannot be read.
    static func planState(_ reply: RedisReply) -> SchedulerStep.PlanState? {
        let values = reply.elements
        guard let plan = values.first, case .bulk(let bytes) = plan else {
            return values.dropFirst().first?.bytes == StageKeys.finishedPlanMarker ? .finished : .absent
        }
        if bytes == StageKeys.finishedPlanMarker { return .finished }
        return plan.decoded(as: PostbackPlan.self).map { .plan($0) }
    }

    /// One crowd counter's HGETALL: day → conversions that day. The pairs are read in place, not through
    /// `fieldMap`'s dictionary of strings (a batch reads hundreds of counters).
    static func dayBuckets(_ reply: RedisReply) -> [Int64: Int] {
        let flat = reply.elements
        var buckets: [Int64: Int] = [:]
        buckets.reserveCapacity(flat.count / 2)
        for index in stride(from: 0, to: flat.count - 1, by: 2) {
            if let day = flat[index].int, let count = flat[index + 1].int { buckets[day] = Int(count) }
        }
        return buckets
    }
}
