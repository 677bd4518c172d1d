import AttributionCrypto
import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// The verifier's batch: the registry entries it needs (looked up outside the partition's
/// transaction), the devices' recent views (WATCHed, in the partition), the registration and
/// signature checks, then the replay claims of the impressions that passed them, the model's
/// `VerifierStep` per event, and one transaction that records views, writes `verified` / `rejected`
/// and acknowledges. The refusal logs the admin API shows are written right after the commit.
///
/// Replay markers are keyed by impression id, not device: an impression replayed with another device
/// id lands in another partition, so the marker cannot join the device's transaction. Each verified
/// impression claims its marker with `SET NX GET` before the transaction, holding the event id: a
/// marker holding another event's id means replay; one holding this event's id is this event's own
/// claim (a batch redone after a WATCH conflict, or a dead letter replayed), so it passes.
struct VerifierStage: StreamStage {
    let step: VerifierStep
    let partitioning: Partitioning
    /// For the replay claims (cross-partition): not the worker's connection, whose WATCH must not mix with them.
    let claims: RedisConnection
    let registryCache: RegistryCache
    /// How many tasks a batch's signature checks are split over (`VERIFIER_THREADS`; 1: all on the
    /// batch's own task).
    var lanes = 1

    struct Batch: Sendable {
        var envelopes: [Envelope?] = []
        var entryIDs: [String] = []
        var partitions: [Partition] = []
        var parsed: [Int: Result<SignedImpression, VerifierStep.Refusal>] = [:]
        var registry = RegistrySnapshot.Request()
        var registryReads: RegistryReads
        /// Each view impression's scope, interval and partition, in the order the reads ask for them.
        var views: [(scope: VerifierStep.ViewScope, interval: ViewInterval, partition: Partition)] = []
    }

    func prepare(_ entries: [StreamEntry]) -> Batch {
        var batch = Batch(registryReads: RegistryReads(registryCache, []))
        var networks = Set<String>()
        var publishers = Set<ItemIdentifier>()
        var advertised = Set<ItemIdentifier>()
        for (index, entry) in entries.enumerated() {
            let envelope = try? Envelope.decode(entry.message)
            let partition = partitioning[entry.partition]
            batch.envelopes.append(envelope)
            batch.entryIDs.append(entry.id)
            batch.partitions.append(partition)
            switch envelope?.body {
            case .impressionReported(let report):
                let parsed = SignedImpression.parse(report)
                batch.parsed[index] = parsed
                guard case .success(let impression) = parsed else {
                    // A refusal naming a network (its kid) is listed for it only if it is registered: look it up.
                    if case .failure(let refusal) = parsed, let network = refusal.adNetworkIdentifier { networks.insert(network) }
                    continue
                }
                let payload = impression.payload
                networks.insert(payload.adNetworkIdentifier.rawValue)
                publishers.insert(payload.publisherItemIdentifier)
                advertised.insert(payload.advertisedItemIdentifier)
                if let view = VerifierStep.view(of: report, payload: payload) {
                    batch.views.append((view.0, view.1, partition))
                }
            case .conversionReported(let report): advertised.insert(report.advertisedItemIdentifier)
            case .updateReported(let report): advertised.insert(report.advertisedItemIdentifier)
            case .activityReported(let report): advertised.insert(report.advertisedItemIdentifier)
            case .testPostbacksRequested(let request): networks.insert(request.adNetworkIdentifier.rawValue)
            default: break
            }
        }
        batch.registry = .init(
            adNetworks: networks.sorted(), publisherApps: publishers.sorted(), advertisedApps: advertised.sorted())
        batch.registryReads = RegistryReads(registryCache, batch.registry.wants)
        return batch
    }

    func reads(for batch: Batch) -> StageReads {
        // WATCH the view sets: two replicas given overlapping views of one device cannot both accept.
        let viewKeys = batch.views.map { DeviceKeys.verifierViews($0.scope, in: $0.partition) }
        let viewReads = zip(viewKeys, batch.views).map { RedisCommand("ZRANGEBYSCORE", $0, "(\($1.interval.begin)", "+inf") }
        return StageReads(watch: Set(viewKeys).sorted(), commands: viewReads, lookups: batch.registryReads.commands())
    }

    func lookupsCurrent(_ batch: Batch, lookups: [RedisReply]) -> Bool {
        batch.registryReads.resolve(lookups[...])
    }

    func decide(_ batch: Batch, state: [RedisReply]) async throws -> [StageOutcome] {
        var facts = VerifierStep.Facts()
        let registry = RegistrySnapshot(request: batch.registry, reads: batch.registryReads).registry
        // Views already recorded that end after each new view begins (the only ones it can overlap).
        for (view, reply) in zip(batch.views, state.dropFirst(batch.registryReads.count)) {
            facts.views[view.scope, default: []] += reply.elements.compactMap { $0.string.flatMap(ViewInterval.init(member:)) }
        }
        let parsed = await verifyAll(batch, registry: registry)
        // Redis failing here (a failover) is not the entries' fault: thrown, the batch is retried whole
        // and no attempt counts against them (a failed outcome would, and dead-letter them after a few).
        facts.seen = try await claimReplayMarkers(batch, parsed: parsed)
        return batch.envelopes.indices.map { index -> StageOutcome in
            guard let envelope = batch.envelopes[index] else { return .failed("not a pipeline envelope") }
            let partition = batch.partitions[index]
            switch step.step(envelope, parsed: parsed[index], registry: registry, facts: &facts, verified: true) {
            case .retry(let reason):
                return .failed(reason)
            case .done(.verified(let message, _, let view, let keepFor)):
                var commands: [RedisCommand] = []
                if let (scope, interval) = view {
                    let key = DeviceKeys.verifierViews(scope, in: partition)
                    commands += [
                        RedisCommand("ZADD", key, String(interval.end), interval.member),
                        RedisCommand("ZREMRANGEBYSCORE", key, "-inf", String(interval.end - keepFor)),
                        RedisCommand("PEXPIRE", key, String(keepFor)),
                    ]
                }
                return StageOutcome.encoding {
                    commands + [StreamCommands.add(StreamNames.verified(partition), message: try message.encoded())]
                }
            case .done(.refused(let rejection, let log, let counts)):
                // A refused event leaves `events` at once (its verdict is on `rejected`): anything anyone
                // sends is kept in full only until it is refused, not for STREAM_RETENTION_HOURS.
                return StageOutcome.encoding(counts: counts.map(StageCount.init), after: RejectionLog.append(rejection, to: log))
                {
                    [
                        try rejection.entry(at: envelope.time, in: partition),
                        RedisCommand("XDEL", StreamNames.events(partition), batch.entryIDs[index]),
                    ]
                }
            }
        }
    }

    /// The registration, signature and payload checks of every impression. The signature checks are most
    /// of the verifier's CPU and independent of each other, so a large batch is split over `lanes`
    /// tasks (the cooperative pool runs one thread per core): one replica uses every core it is given
    /// instead of one, and the batch's turn around the loop (read, check, write) gets shorter.
    func verifyAll(_ batch: Batch, registry: VerifierStep.Registry) async -> [Int: Result<SignedImpression, VerifierStep.Refusal>]
    {
        let work = batch.parsed.compactMap {
            index, result -> (Int, Result<SignedImpression, VerifierStep.Refusal>, ImpressionReport)? in
            guard case .impressionReported(let report) = batch.envelopes[index]?.body else { return nil }
            return (index, result, report)
        }
        var parsed = batch.parsed
        let lanes = min(self.lanes, work.count / Self.impressionsPerLane)
        guard lanes > 1 else {
            for (index, result, report) in work { parsed[index] = step.verified(result, report: report, registry: registry) }
            return parsed
        }
        let step = step
        await withTaskGroup(of: [(Int, Result<SignedImpression, VerifierStep.Refusal>)].self) { group in
            for lane in 0..<lanes {
                let share = Array(work[(work.count * lane / lanes)..<(work.count * (lane + 1) / lanes)])
                group.addTask { share.map { ($0.0, step.verified($0.1, report: $0.2, registry: registry)) } }
            }
            for await results in group {
                for (index, result) in results { parsed[index] = result }
            }
        }
        return parsed
    }

    /// Below this many impressions per lane, handing work to another thread costs more than it saves.
    static let impressionsPerLane = 16

    /// Claims the replay marker of every impression that passed verification (one pipeline, split by
    /// node on a cluster); returns the impression ids already claimed by another event.
    func claimReplayMarkers(
        _ batch: Batch, parsed: [Int: Result<SignedImpression, VerifierStep.Refusal>]
    ) async throws -> Set<String> {
        let claiming = parsed.keys.sorted().compactMap { index -> (impression: String, event: String)? in
            guard case .success(let impression)? = parsed[index], let envelope = batch.envelopes[index] else { return nil }
            return (impression.payload.impressionIdentifier, envelope.id)
        }
        let keepFor = String(Retention.impressionFreshness(step.policy))
        let now = WallClock.nowMilliseconds()
        let replies = try await claims.pipeline(
            claiming.map {
                RedisCommand(
                    "SET", StageKeys.replayMarker(impression: $0.impression, partitioning),
                    VerifierStep.markerValue(event: $0.event, claimedAt: now), "NX", "GET", "PX", keepFor)
            })
        var claimed: [VerifierStep.MarkerClaim] = []
        for (claim, reply) in zip(claiming, replies) {
            if let message = reply.errorMessage { throw RedisError(.server, message) }
            claimed.append(.init(impression: claim.impression, event: claim.event, marker: reply.string))
        }
        return VerifierStep.usedImpressions(claimed, now: now)
    }
}
