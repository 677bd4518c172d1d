import AttributionModel
import Foundation
import RedisStreams
import ServiceRuntime

/// One batch: look up the crowd counters (every partition's shard) and the app's current schema for
/// new attributions, WATCH and GET the plans it touches (in their partition), run the model's
/// `SchedulerStep` per message, then write the plans, window timers, held postbacks and the crowd
/// counts of the batch's partition, and acknowledge, in one transaction.
///
/// Crowd counts are read unWATCHed, as before partitioning: a tier assessed from a count that another
/// replica raises a moment later is the tier of a crowd one conversion smaller, never a larger one.
/// A crowd read within `CROWD_CACHE_MS` comes from `CrowdCache` instead (see there).
struct SchedulerStage: StreamStage {
    let step: SchedulerStep
    let partitioning: Partitioning
    let crowdCache: CrowdCache
    /// Redis Cluster: crowd counters are per-partition shards, summed when a tier is assessed. On one
    /// Redis, one counter per crowd (see `StageKeys.crowd(_:shard:)`).
    let shardsCrowds: Bool
    let clock: @Sendable () -> Milliseconds

    struct Batch: Sendable {
        var envelopes: [Envelope?] = []
        var partitions: [Partition] = []
        var conversions: [(id: String, partition: Partition)] = []  // plans to read, first-seen order
        var crowds: [Crowd] = []  // crowd counters the batch needs
        var fetch: [Crowd] = []  // those to read from Redis (the rest come from the cache)
        let pending = PendingIncrements()
        var schemaApps: [ItemIdentifier] = []  // advertised apps whose current schema a new plan pins
    }

    func prepare(_ entries: [StreamEntry]) -> Batch {
        var batch = Batch()
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
        batch.fetch = crowdCache.stale(batch.crowds)
        return batch
    }

    func reads(for batch: Batch) -> StageReads {
        let plans = batch.conversions.map { StageKeys.plan(conversion: $0.id, in: $0.partition) }
        var lookups = batch.fetch.flatMap { crowd in
            shardsOf(crowd).map { RedisCommand("HGETALL", $0) }
        }
        if !batch.schemaApps.isEmpty {
            lookups.append(RedisCommand(["HMGET", RegistryKeys.currentSchemas] + batch.schemaApps.map(String.init)))
        }
        return StageReads(watch: plans, commands: plans.map { RedisCommand("GET", $0) }, lookups: lookups)
    }

    func decide(_ batch: Batch, state: [RedisReply]) async -> [StageOutcome] {
        var replies = state[...]
        var fetched: [Crowd: [Int64: Int]] = [:]
        let repliesPerCrowd = shardsCrowds ? partitioning.count : 1
        for crowd in batch.fetch {
            // The crowd's count per day: the sum of every partition's shard.
            fetched[crowd] = [:]
            for reply in replies.prefix(repliesPerCrowd) {
                fetched[crowd]?.merge(Self.dayBuckets(reply), uniquingKeysWith: +)
            }
            replies = replies.dropFirst(repliesPerCrowd)
        }
        crowdCache.store(fetched)
        let counters = crowdCache.counts(batch.crowds.filter { fetched[$0] == nil }).merging(fetched) { $1 }
        var schemas: [ItemIdentifier: ConversionValueSchema] = [:]
        if !batch.schemaApps.isEmpty {
            schemas = replies.first?.decodedFields(batch.schemaApps, as: ConversionValueSchema.self) ?? [:]
            replies = replies.dropFirst()
        }
        var plans: [String: SchedulerStep.PlanState] = [:]
        for (conversion, reply) in zip(batch.conversions, replies) {
            plans[conversion.id] = Self.planState(reply)
        }
        var crowd = CrowdCounts(read: counters)
        var generator = KernelRandom()
        let now = clock()
        var increments: [CrowdIncrement] = []
        defer { batch.pending.increments.withLock { $0 = increments } }

        return zip(batch.envelopes, batch.partitions).map { envelope, partition -> StageOutcome in
            guard let envelope, let id = SchedulerStep.conversionIdentifier(of: envelope) else {
                return .failed("scheduler takes attributions, attributed updates and window timers")
            }
            var schema: ConversionValueSchema?
            if case .conversionAttributed(let attribution) = envelope.body {
                schema = schemas[attribution.advertisedItemIdentifier]
            }
            switch step.step(
                plans[id] ?? .absent, message: envelope, crowd: &crowd, schema: schema, now: now, using: &generator)
            {
            case .retry(let reason):
                return .failed(reason)
            case .done(let effects):
                if let stored = effects.store { plans[id] = stored }
                if let increment = effects.crowd { increments.append(increment) }
                return .write(
                    commands(for: effects, conversion: id, in: partition), counts: effects.counts.map(StageCount.init))
            }
        }
    }

    /// The keys a crowd's count is the sum of: every partition's shard, or the one counter.
    func shardsOf(_ crowd: Crowd) -> [String] {
        shardsCrowds ? partitioning.partitions.map { StageKeys.crowd(crowd, shard: $0) } : [StageKeys.crowd(crowd, shard: nil)]
    }

    /// The batch committed: its crowd increments are now in Redis, so in the cache too.
    func committed(_ batch: Batch) {
        crowdCache.apply(batch.pending.increments.withLock { $0 })
    }

    /// The step's effects as Redis commands: plan (or marker), crowd counts, timers, held postbacks.
    func commands(for effects: SchedulerStep.Effects, conversion id: String, in partition: Partition) -> [RedisCommand] {
        var commands: [RedisCommand] = []
        if let increment = effects.crowd {
            for crowd in increment.crowds {
                let key = StageKeys.crowd(crowd, shard: shardsCrowds ? partition : nil)
                commands += [
                    RedisCommand("HINCRBY", key, String(increment.day), "1"),
                    RedisCommand(["HDEL", key] + increment.staleDays.map(String.init)),
                    RedisCommand("PEXPIRE", key, String(increment.keepFor)),
                ]
            }
        }
        for timer in effects.timers {
            commands += DelayedQueues.windowTimers(partition).schedule(
                id: timer.identifier, dueAtMilliseconds: timer.dueAt, message: timer.message.encoded())
        }
        let key = StageKeys.plan(conversion: id, in: partition)
        switch effects.store {
        case .finished?:
            commands.append(
                .set(key, StageKeys.finishedPlanMarker, expiringAfter: Retention.finishedMarker(step.policy)))
        case .plan(let plan)?:
            let json = (try? JSONCoding.encoder.encode(plan)).map(Array.init) ?? []
            commands.append(.set(key, json, expiringAfter: Retention.plan(step.policy)))
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

    static func planState(_ reply: RedisReply) -> SchedulerStep.PlanState {
        guard case .bulk(let bytes) = reply else { return .absent }
        if bytes == StageKeys.finishedPlanMarker { return .finished }
        return reply.decoded(as: PostbackPlan.self).map { .plan($0) } ?? .absent
    }

    /// One crowd counter's HGETALL: day → conversions that day.
    static func dayBuckets(_ reply: RedisReply) -> [Int64: Int] {
        var buckets: [Int64: Int] = [:]
        for (day, count) in reply.fieldMap {
            if let day = Int64(day), let count = count.string.flatMap({ Int($0) }) { buckets[day] = count }
        }
        return buckets
    }
}
