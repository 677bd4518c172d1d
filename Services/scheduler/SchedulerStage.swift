import AttributionModel
import Foundation
import Metrics
import RedisStreams
import ServiceRuntime

/// One batch: WATCH and GET the plans it touches (plus crowd counts for new conversions), feed the
/// messages to the model's `PostbackPlan`, then write the plans, schedule window timers and held
/// postbacks, and acknowledge, in one transaction.
struct SchedulerStage: StreamStage {
    let policy: TimePolicy
    let thresholds: CrowdTierThresholds
    /// Wall-clock ms a window's timer waits past its end for updates still on their way.
    let windowCloseGraceMilliseconds: Milliseconds

    static let windowTimers = DelayedQueue(name: DelayedQueueNames.windowTimers, target: StreamNames.schedulerTimers)
    /// Compact: millions of postbacks may wait here for days, each one binary sorted-set member. One
    /// queue per window, so `ZCARD` tells operators how many are held for each.
    static let heldPostbacks = (0..<ConversionWindows.count).map { window in
        DelayedQueue(name: DelayedQueueNames.heldPostbacks(window: window), target: StreamNames.postbacks, layout: .compact)
    }

    /// What late updates (and late supersessions) did to postbacks: `prepared` for a window that had
    /// none, `swapped` for a held one, `too-late` for one already released (the late value never goes out).
    static func countLate(_ change: String) {
        Counter(label: "scheduler_late_postbacks_total", dimensions: [("change", change)]).increment()
    }

    static func planKey(_ conversionIdentifier: String) -> String { "scheduler:plan:\(conversionIdentifier)" }
    /// What a finished plan's key holds instead of the plan.
    static let finishedMarker = Array("finished".utf8)

    func conversionIdentifier(_ envelope: Envelope) -> String? {
        switch envelope.body {
        case .conversionAttributed(let a): a.conversionIdentifier
        case .updateAttributed(let u): u.conversionIdentifier
        case .windowClosed(let w): w.conversionIdentifier
        case .conversionSuperseded(let c): c.conversionIdentifier
        case .activityAttributed(let a): a.conversionIdentifier
        default: nil
        }
    }

    struct Batch: Sendable {
        var envelopes: [Envelope?] = []
        var planKeys: [String] = []
        var crowdFor: [String] = []  // conversion ids whose crowd counts follow the plan GETs
    }

    func prepare(_ batch: [StreamEntry]) -> Batch {
        var reads = Batch()
        var seen = Set<String>()
        for entry in batch {
            let envelope = try? Envelope.decode(entry.message)
            reads.envelopes.append(envelope)
            guard let envelope, let id = conversionIdentifier(envelope) else { continue }
            if seen.insert(id).inserted { reads.planKeys.append(Self.planKey(id)) }
            if case .conversionAttributed = envelope.body { reads.crowdFor.append(id) }
        }
        return reads
    }

    func reads(for layout: Batch) -> StageReads {
        let counters = CrowdCounters(policy: policy)
        var commands = layout.planKeys.map { RedisCommand("GET", $0) }
        for envelope in layout.envelopes {
            if case .conversionAttributed(let attribution)? = envelope?.body {
                // The app's schema in force now is pinned to the new plan.
                commands +=
                    counters.countCommands(for: attribution) + [
                        RedisCommand("HGET", RegistryKeys.currentSchemas, String(attribution.advertisedItemIdentifier))
                    ]
            }
        }
        return StageReads(watch: layout.planKeys, commands: commands)
    }

    func decide(_ layout: Batch, state: [RedisReply]) async -> [StageOutcome] {
        var plans: [String: PostbackPlan] = [:]
        var finished = Set<String>()
        for (key, reply) in zip(layout.planKeys, state) {
            guard case .bulk(let bytes) = reply else { continue }
            if bytes == Self.finishedMarker {
                finished.insert(key)
            } else if let plan = try? JSONCoding.decoder.decode(PostbackPlan.self, from: Data(bytes)) {
                plans[key] = plan
            }
        }
        var crowdReplies = state.dropFirst(layout.planKeys.count)[...]
        var batchCrowd: [String: Int] = [:]  // conversions earlier in this batch count toward the crowd too
        var generator = SystemRandomNumberGenerator()
        let counters = CrowdCounters(policy: policy)

        return layout.envelopes.map { envelope -> StageOutcome in
            guard let envelope, let id = conversionIdentifier(envelope) else {
                return .failed("scheduler takes attributions, attributed updates and window timers")
            }
            let key = Self.planKey(id)
            // Everything for a finished conversion (a late update, a redelivery) is acknowledged and ignored.
            if finished.contains(key) { return .write([]) }
            var commands: [RedisCommand] = []
            var held: [HeldPostback] = []
            var late = false  // stamped before a window that already closed: what it prepares is counted
            switch envelope.body {
            case .conversionAttributed(let attribution):
                let keys = CrowdCounters.allKeys(for: attribution)
                let counts = zip(keys, crowdReplies.prefix(keys.count)).map {
                    counters.count($1, at: attribution.conversionTime) + batchCrowd[$0, default: 0]
                }
                let schema = crowdReplies.dropFirst(keys.count).first?.bytes.flatMap {
                    try? JSONCoding.decoder.decode(ConversionValueSchema.self, from: Data($0))
                }
                crowdReplies = crowdReplies.dropFirst(keys.count + 1)
                guard plans[key] == nil else { return .write([]) }  // already planned: a redelivery
                for k in keys { batchCrowd[k, default: 0] += 1 }
                let crowd = CrowdAssessment.assess(CrowdCounters.sizes(from: counts), thresholds: thresholds)
                let plan = PostbackPlan(attribution: attribution, crowd: crowd, valueSchema: schema)
                plans[key] = plan
                commands += counters.recordCommands(for: attribution)
                let grace = ConversionWindows.closeGrace(
                    configured: windowCloseGraceMilliseconds, development: attribution.isDevelopment, policy: policy)
                for (window, at) in plan.windowEnds(policy: policy) {
                    let timer = Envelope(time: at, body: .windowClosed(.init(conversionIdentifier: id, window: window, time: at)))
                    commands += Self.windowTimers.schedule(
                        id: "\(id):\(window)", dueAtMilliseconds: at + grace, message: timer.encoded())
                }
            case .updateAttributed(let update):
                // Attributions and updates travel one stream in order, but replicas may take neighbours
                // out of order: an update whose plan is not written yet fails and is retried after the claim idle time.
                guard var plan = plans[key] else { return .failed("no postback plan yet for conversion \(id)") }
                late = plan.isLate(stampedAt: update.time)
                held = plan.apply(update, policy: policy, using: &generator)
                plans[key] = plan
            case .activityAttributed(let activity):
                // Like an update: the plan may still be on its way from a neighbouring entry.
                guard var plan = plans[key] else { return .failed("no postback plan yet for conversion \(id)") }
                late = plan.isLate(stampedAt: activity.time)
                held = plan.record(activity, policy: policy, using: &generator)
                plans[key] = plan
            case .conversionSuperseded(let superseded):
                guard var plan = plans[key] else { return .write([]) }  // plan finished and removed
                late = plan.isLate(stampedAt: superseded.time)
                held = plan.supersede(at: superseded.time, policy: policy, using: &generator)
                plans[key] = plan
            case .windowClosed(let timer):
                guard var plan = plans[key] else { return .write([]) }  // plan finished and removed
                held = plan.closeWindow(timer.window, policy: policy, using: &generator)
                plans[key] = plan
            default:
                return .failed("unexpected \(envelope.type.rawValue)")
            }
            let plan = plans[key]!
            // Every window done, but a postback still held: a late update may yet swap it, so the plan
            // stays until the last one is released, when a timer (window `count`) wakes it.
            let now = WallClock.nowMilliseconds()
            let releasing = plan.keptUntil(now: now)
            if let releasing {
                let wake = Envelope(
                    time: releasing,
                    body: .windowClosed(.init(conversionIdentifier: id, window: ConversionWindows.count, time: releasing)))
                commands += Self.windowTimers.schedule(
                    id: "\(id):released", dueAtMilliseconds: releasing, message: wake.encoded())
            }
            if plan.isFinished && releasing == nil {
                // A finished plan leaves only a marker, kept as long as attribution-winner may still route
                // updates to the conversion, so late updates are ignored rather than retried.
                finished.insert(key)
                commands.append(
                    RedisCommand(bytes: [
                        Array("SET".utf8), Array(key.utf8), Self.finishedMarker, Array("PX".utf8),
                        Array(String(policy.milliseconds(.days(66))).utf8),
                    ]))
            } else {
                let json = (try? JSONCoding.encoder.encode(plan)).map(Array.init) ?? []
                commands.append(
                    RedisCommand(bytes: [
                        Array("SET".utf8), Array(key.utf8), json, Array("PX".utf8),
                        Array(String(policy.milliseconds(.days(37))).utf8),
                    ]))
            }
            for postback in held {
                let queue = Self.heldPostbacks[postback.order.payload.postbackSequenceIndex]
                let message = CompactHeldPostback.encode(postback.order, dueAt: postback.dueAt)
                if let old = postback.replacing {
                    // Past its due time the old one is released (or about to be): the swap will find nothing.
                    Self.countLate(old.dueAt > now ? "swapped" : "too-late")
                    commands += queue.replace(
                        CompactHeldPostback.encode(old.order, dueAt: old.dueAt), with: message,
                        dueAtMilliseconds: postback.dueAt)
                } else {
                    if late { Self.countLate("prepared") }
                    commands += queue.schedule(
                        id: postback.order.payload.postbackIdentifier, dueAtMilliseconds: postback.dueAt, message: message)
                }
            }
            return .write(commands)
        }
    }
}
