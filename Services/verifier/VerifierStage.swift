import AttributionCrypto
import AttributionModel
import Foundation
import RedisStreams
import ServiceRuntime

/// The verifier's batch: one read pipeline (replay markers, registry entries, the devices' recent
/// views), the model's `VerifierStep` per event, then one transaction that marks impressions as seen,
/// records views, writes `verified` / `rejected` (and the refusal logs ingest's admin API shows), and
/// acknowledges.
struct VerifierStage: StreamStage {
    let step: VerifierStep

    struct Batch: Sendable {
        var envelopes: [Envelope?] = []
        var parsed: [Int: Result<SignedImpression, VerifierStep.Refusal>] = [:]
        var impressions: [String] = []  // ids whose replay markers to read
        var registry = RegistrySnapshot.Request()
        /// Each view impression's scope and interval, in the order the reads ask for them.
        var views: [(scope: VerifierStep.ViewScope, interval: ViewInterval)] = []
    }

    func prepare(_ entries: [StreamEntry]) -> Batch {
        var batch = Batch()
        var networks = Set<String>()
        var publishers = Set<ItemIdentifier>()
        var advertised = Set<ItemIdentifier>()
        for (index, entry) in entries.enumerated() {
            let envelope = try? Envelope.decode(entry.message)
            batch.envelopes.append(envelope)
            switch envelope?.body {
            case .impressionReported(let report):
                let parsed = SignedImpression.parse(report)
                batch.parsed[index] = parsed
                guard case .success(let impression) = parsed else { continue }
                let payload = impression.payload
                networks.insert(payload.adNetworkIdentifier.rawValue)
                publishers.insert(payload.publisherItemIdentifier)
                advertised.insert(payload.advertisedItemIdentifier)
                batch.impressions.append(payload.impressionIdentifier)
                if let view = VerifierStep.view(of: report, payload: payload) { batch.views.append(view) }
            case .conversionReported(let report): advertised.insert(report.advertisedItemIdentifier)
            case .updateReported(let report): advertised.insert(report.advertisedItemIdentifier)
            case .activityReported(let report): advertised.insert(report.advertisedItemIdentifier)
            default: break
            }
        }
        batch.registry = .init(
            adNetworks: networks.sorted(), publisherApps: publishers.sorted(), advertisedApps: advertised.sorted())
        return batch
    }

    func reads(for batch: Batch) -> StageReads {
        // WATCH the replay markers and view sets: two replicas given the same impression (or overlapping
        // views of one device) cannot both accept.
        let markers = batch.impressions.map { StageKeys.replayMarker(impression: $0) }
        let viewKeys = batch.views.map { DeviceKeys.verifierViews($0.scope) }
        let viewReads = zip(viewKeys, batch.views).map { RedisCommand("ZRANGEBYSCORE", $0, "(\($1.interval.begin)", "+inf") }
        return StageReads(
            watch: markers + Set(viewKeys).sorted(),
            commands: markers.map { RedisCommand("EXISTS", $0) } + batch.registry.commands + viewReads)
    }

    func decide(_ batch: Batch, state: [RedisReply]) async -> [StageOutcome] {
        var facts = VerifierStep.Facts()
        for (impression, reply) in zip(batch.impressions, state) where reply.int == 1 { facts.seen.insert(impression) }
        let registry = RegistrySnapshot(request: batch.registry, state: state, offset: batch.impressions.count).registry
        // Views already recorded that end after each new view begins (the only ones it can overlap).
        let viewReplies = state.dropFirst(batch.impressions.count + batch.registry.commands.count)
        for (view, reply) in zip(batch.views, viewReplies) {
            facts.views[view.scope, default: []] += reply.elements.compactMap { $0.string.flatMap(ViewInterval.init(member:)) }
        }
        return batch.envelopes.indices.map { index -> StageOutcome in
            guard let envelope = batch.envelopes[index] else { return .failed("not a pipeline envelope") }
            switch step.step(envelope, parsed: batch.parsed[index], registry: registry, facts: &facts) {
            case .retry(let reason):
                return .failed(reason)
            case .done(.verified(let message, let markSeen, let view, let keepFor)):
                var commands: [RedisCommand] = []
                if let markSeen {
                    commands.append(.set(StageKeys.replayMarker(impression: markSeen), Array("1".utf8), expiringAfter: keepFor))
                }
                if let (scope, interval) = view {
                    let key = DeviceKeys.verifierViews(scope)
                    commands += [
                        RedisCommand("ZADD", key, String(interval.end), interval.member),
                        RedisCommand("ZREMRANGEBYSCORE", key, "-inf", String(interval.end - keepFor)),
                        RedisCommand("PEXPIRE", key, String(keepFor)),
                    ]
                }
                return .write(commands + [StreamCommands.add(StreamNames.verified, message: message.encoded())])
            case .done(.refused(let rejection, let log, let counts)):
                return .write(Self.rejection(rejection, at: envelope.time, log: log), counts: counts.map(StageCount.init))
            }
        }
    }

    /// The `rejected` entry and the refusal log of its network (or app).
    static func rejection(_ rejection: Rejection, at time: Milliseconds, log: VerifierStep.RefusalLog?) -> [RedisCommand] {
        var commands = [rejection.entry(at: time)]
        if let log, let json = try? JSONCoding.encoder.encode(rejection) {
            let key = RejectionLog.key(log)
            commands += [
                RedisCommand(bytes: [Array("LPUSH".utf8), Array(key.utf8), Array(json)]),
                RedisCommand("LTRIM", key, "0", String(RejectionLog.capacity - 1)),
                RedisCommand("PEXPIRE", key, String(Retention.rejectionLog)),
            ]
        }
        return commands
    }
}
