import AttributionModel
import Foundation
import Metrics
import RedisStreams
import ServiceRuntime

/// One batch: WATCH and GET the state of every device it touches, apply the messages in order with
/// the model's pure rules, then write the states, the `attributions` output and the ack at once.
/// A replica racing on the same device makes EXEC fail, and the batch is redone from fresh state.
///
/// Conversions settle first: read from `verified`, a conversion waits `settleMilliseconds` (wall clock)
/// in a delayed queue, and is attributed when it comes back through `winner:settled`. Impressions the
/// network reported a little after the conversion (another ingest replica, a client's batch) are in
/// the pool by then; updates that arrive meanwhile wait as pending updates, as they would anyway.
struct AttributionWinnerStage: StreamStage {
    /// Which stream this instance reads.
    enum Input: Sendable {
        /// `verified`: impressions and updates are applied; conversions are put to settle.
        case verified
        /// `winner:settled`: conversions whose settle time has passed are attributed.
        case settled
    }

    let policy: TimePolicy
    let input: Input
    /// Wall-clock milliseconds a conversion waits before it is attributed; 0 attributes at once.
    let settleMilliseconds: Milliseconds
    let clock: @Sendable () -> Milliseconds

    static let settling = DelayedQueue(name: DelayedQueueNames.settlingConversions, target: StreamNames.conversionsSettled)

    /// Per device and advertised app. Device identifiers stay in these keys: nothing downstream sees them.
    static func stateKey(device: String, app: ItemIdentifier) -> String { DeviceKeys.winnerState(device: device, app: app) }

    /// Kept while an impression (30 days) could still lead to a conversion whose windows (35 days) run.
    var stateTTL: Milliseconds { policy.milliseconds(.days(66)) }

    func key(for envelope: Envelope) -> String? {
        switch envelope.body {
        case .impressionVerified(let i): Self.stateKey(device: i.deviceIdentifier, app: i.payload.advertisedItemIdentifier)
        case .conversionVerified(let c): Self.stateKey(device: c.report.deviceIdentifier, app: c.report.advertisedItemIdentifier)
        case .updateVerified(let u): Self.stateKey(device: u.deviceIdentifier, app: u.advertisedItemIdentifier)
        case .activityVerified(let a): Self.stateKey(device: a.deviceIdentifier, app: a.advertisedItemIdentifier)
        default: nil
        }
    }

    /// A device's re-engagements across all apps (sorted set of conversion ids by time), for the
    /// per-device cap.
    static func reengagementsKey(device: String) -> String { DeviceKeys.winnerReengagements(device: device) }

    /// The batch decoded once, with the device keys it touches in first-seen order.
    struct Batch: Sendable {
        var envelopes: [Envelope?]
        var keys: [String]
        var reengagementKeys: [String]
    }

    func prepare(_ entries: [StreamEntry]) -> Batch {
        let envelopes = entries.map { try? Envelope.decode($0.message) }
        var seen = Set<String>()
        let keys = envelopes.compactMap { $0.flatMap(key(for:)) }.filter { seen.insert($0).inserted }
        let reengagementKeys = envelopes.compactMap { envelope -> String? in
            guard case .conversionVerified(let c)? = envelope?.body, c.report.conversionType == .reengagement else { return nil }
            return Self.reengagementsKey(device: c.report.deviceIdentifier)
        }.filter { seen.insert($0).inserted }
        return Batch(envelopes: envelopes, keys: keys, reengagementKeys: reengagementKeys)
    }

    func reads(for batch: Batch) -> StageReads {
        // WATCHed: a replica racing on the same device (or the same device's caps) redoes its batch.
        StageReads(
            watch: batch.keys + batch.reengagementKeys,
            commands: batch.keys.map { RedisCommand("GET", $0) }
                + batch.reengagementKeys.map { RedisCommand("ZRANGE", $0, "0", "-1", "WITHSCORES") })
    }

    func decide(_ batch: Batch, state: [RedisReply]) async -> [StageOutcome] {
        var states: [String: DeviceAttributionState] = [:]
        for (key, reply) in zip(batch.keys, state) {
            if case .bulk(let bytes) = reply {
                states[key] = (try? JSONCoding.decoder.decode(DeviceAttributionState.self, from: Data(bytes))) ?? .init()
            }
        }
        var reengagements: [String: [Milliseconds]] = [:]
        for (key, reply) in zip(batch.reengagementKeys, state.dropFirst(batch.keys.count)) {
            let flat = reply.elements
            reengagements[key] = stride(from: 1, to: flat.count, by: 2).compactMap { flat[$0].int }
        }
        var outcomes: [StageOutcome] = []
        for envelope in batch.envelopes {
            guard let envelope, let key = key(for: envelope) else {
                outcomes.append(.failed("attribution-winner takes verified impressions, conversions, updates and activity"))
                continue
            }
            var device = states[key] ?? DeviceAttributionState()
            var outputs: [Envelope] = []
            var writes: [RedisCommand] = []
            switch envelope.body {
            case .impressionVerified(let impression):
                if device.record(impression) { Counter(label: "winner_late_impressions_total").increment() }
            case .conversionVerified(let conversion) where input == .verified && settleMilliseconds > 0:
                device.settle(conversion.report, conversionIdentifier: envelope.id)
                writes += Self.settling.schedule(
                    id: envelope.id, dueAtMilliseconds: clock() + settleMilliseconds, message: envelope.encoded())
            case .conversionVerified(let conversion):
                let report = conversion.report
                let capsKey = Self.reengagementsKey(device: report.deviceIdentifier)
                // The conversion id derives from the event id, so a redone batch makes the same one.
                switch device.attribute(
                    conversion, conversionIdentifier: envelope.id, deviceReengagements: reengagements[capsKey] ?? [],
                    policy: policy)
                {
                case .success(let outcome):
                    outputs.append(
                        Envelope(id: envelope.id, time: envelope.time, body: .conversionAttributed(outcome.attribution)))
                    outputs += outcome.updates.map { Envelope(time: $0.time, body: .updateAttributed($0)) }
                    outputs += device.routePendingActivities().map { Envelope(time: $0.time, body: .activityAttributed($0)) }
                    outputs += outcome.superseded.map {
                        Envelope(
                            time: report.time,
                            body: .conversionSuperseded(
                                .init(conversionIdentifier: $0, supersededBy: envelope.id, time: report.time)))
                    }
                    if report.conversionType == .reengagement {
                        reengagements[capsKey, default: []].append(report.time)
                        let year = policy.milliseconds(ConversionEligibility.deviceCap.period)
                        writes += [
                            RedisCommand("ZADD", capsKey, String(report.time), envelope.id),
                            RedisCommand("ZREMRANGEBYSCORE", capsKey, "-inf", String(report.time - year)),
                            RedisCommand("PEXPIRE", capsKey, String(year)),
                        ]
                    }
                    Counter(label: "winner_conversions_total", dimensions: [("outcome", "attributed")]).increment()
                case .failure(let refusal):
                    // Recorded with its reason, like the verifier's refusals: every event is accounted for.
                    let rejection = Rejection(
                        reason: RejectionReason(refusal), detail: "the conversion was not attributed (\(refusal.rawValue))",
                        eventIdentifier: envelope.id)
                    writes.append(rejection.entry(at: report.time))
                    // Updates that waited on this conversion go to the one before it.
                    outputs += device.routePending().map { Envelope(time: $0.time, body: .updateAttributed($0)) }
                    outputs += device.routePendingActivities().map { Envelope(time: $0.time, body: .activityAttributed($0)) }
                    Counter(label: "winner_conversions_total", dimensions: [("outcome", refusal.rawValue)]).increment()
                }
            case .updateVerified(var report):
                report.eventIdentifier = envelope.id
                if let routed = device.receive(report) {
                    outputs.append(Envelope(id: envelope.id, time: envelope.time, body: .updateAttributed(routed)))
                }
            case .activityVerified(var report):
                report.eventIdentifier = envelope.id
                if let routed = device.receive(report) {
                    outputs.append(Envelope(id: envelope.id, time: envelope.time, body: .activityAttributed(routed)))
                }
            default: break
            }
            states[key] = device
            let json = (try? JSONCoding.encoder.encode(device)).map(Array.init) ?? []
            outcomes.append(
                .write(
                    [
                        RedisCommand(bytes: [
                            Array("SET".utf8), Array(key.utf8), json, Array("PX".utf8), Array(String(stateTTL).utf8),
                        ])
                    ] + writes
                        + outputs.map { StreamCommands.add(StreamNames.attributions, message: $0.encoded()) }))
        }
        return outcomes
    }
}
