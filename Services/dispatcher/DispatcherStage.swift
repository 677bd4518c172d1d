import AttributionModel
import Foundation
import RedisStreams
import ServiceRuntime

/// One batch of due postbacks and due retries: the model's `DispatcherStep` fans each out to its
/// destinations (signing new ones once with this process's key), every delivery is POSTed concurrently
/// (bounded per host), the step judges each answer, and one transaction acknowledges the batch,
/// schedules each failed destination's retry and dead-letters the exhausted.
struct DispatcherStage: StreamStage {
    let step: DispatcherStep
    let signer: PostbackSigner
    let delivery: PostbackDelivery
    let partitioning: Partitioning
    let registryCache: RegistryCache
    let clock: @Sendable () -> Milliseconds

    /// The batch decoded once, with the ad networks and advertised apps whose registrations it needs.
    struct Batch: Sendable {
        var envelopes: [Envelope?]
        var partitions: [Partition]
        var networks: [String]
        var apps: [String]
        var registry: RegistryReads
    }

    func prepare(_ entries: [StreamEntry]) -> Batch {
        let envelopes = entries.map { try? Envelope.decode($0.message) }
        let needed = envelopes.compactMap { $0.flatMap(DispatcherStep.registrationsNeeded(by:)) }
        let networks = Self.unique(needed.map(\.network))
        let apps = Self.unique(needed.compactMap(\.app))
        return Batch(
            envelopes: envelopes, partitions: entries.map { partitioning[$0.partition] }, networks: networks, apps: apps,
            registry: RegistryReads(
                registryCache, [.init(RegistryKeys.adNetworks, networks), .init(RegistryKeys.advertisedApps, apps)]))
    }

    static func unique(_ values: [String]) -> [String] {
        var seen = Set<String>()
        return values.filter { seen.insert($0).inserted }
    }

    func reads(for batch: Batch) -> StageReads {
        // The registry, outside the partition's transaction (nothing here is WATCHed).
        StageReads(lookups: batch.registry.commands())
    }

    func lookupsCurrent(_ batch: Batch, lookups: [RedisReply]) -> Bool {
        batch.registry.resolve(lookups[...])
    }

    func decide(_ batch: Batch, state: [RedisReply]) async -> [StageOutcome] {
        let registry = batch.registry.replies
        let networks = registry.first?.decodedFields(batch.networks, as: AdNetworkRegistration.self) ?? [:]
        let apps = registry.dropFirst().first?.decodedFields(batch.apps, as: AdvertisedAppConfiguration.self) ?? [:]
        let now = clock()
        let work = batch.envelopes.map { envelope -> StepOutcome<DispatcherStep.Work> in
            guard let envelope else { return .retry("not a pipeline envelope") }
            return step.work(for: envelope, networks: networks, apps: apps, now: now, sign: signer.body(for:))
        }
        let deliveries = work.flatMap { item -> [DeliveryRetry] in
            if case .done(let work) = item { return work.deliveries }
            return []
        }
        var responses = await deliverAll(deliveries)[...]
        // Waits count from the failure, not from the batch's start: a slow POST must not shorten the next wait.
        let failedAt = clock()
        var generator = KernelRandom()
        return zip(work, batch.partitions).map { item, partition -> StageOutcome in
            let stats = StageKeys.dispatcherStats(partition)
            switch item {
            case .retry(let reason):
                return .failed(reason)
            case .done(let work):
                var commands = work.undeliverable.flatMap { deadLetter($0.delivery, reason: $0.reason, in: partition) }
                var counts: [StageCount] = []
                for attempt in work.deliveries {
                    let (verdict, count) = step.verdict(
                        for: attempt, response: responses.removeFirst(), now: failedAt, using: &generator)
                    counts.append(StageCount(count))
                    switch verdict {
                    case .delivered:
                        commands.append(RedisCommand("HINCRBY", stats, "delivered", "1"))
                    case .retry(let retry, let due):
                        commands +=
                            DelayedQueues.deliveryRetries(partition).schedule(
                                id: retry.deliveryIdentifier, dueAtMilliseconds: due,
                                message: Envelope(id: retry.deliveryIdentifier, time: due, body: .deliveryRetry(retry)).encoded())
                            + [RedisCommand("HINCRBY", stats, "failed-attempts", "1")]
                    case .dead(let record, let reason):
                        commands += deadLetter(record, reason: reason, in: partition)
                    }
                }
                return .write(commands, counts: counts)
            }
        }
    }

    /// POSTs every delivery at once; `PostbackDelivery` bounds the concurrency per host.
    func deliverAll(_ deliveries: [DeliveryRetry]) async -> [DispatcherStep.Response] {
        await withTaskGroup(of: (Int, DispatcherStep.Response).self) { group in
            for (index, attempt) in deliveries.enumerated() {
                let executor = EventLoopTaskExecutor(delivery.poster.eventLoopGroup.next())
                group.addTask(executorPreference: executor) { (index, await delivery.post(attempt.body, to: attempt.url)) }
            }
            var responses = [DispatcherStep.Response](repeating: .delivered, count: deliveries.count)
            for await (index, response) in group { responses[index] = response }
            return responses
        }
    }

    func deadLetter(_ retry: DeliveryRetry, reason: String, in partition: Partition) -> [RedisCommand] {
        var fields = [
            "XADD", StreamNames.deliveriesDead(partition), "*", "postback-identifier", retry.postbackIdentifier, "destination",
            (retry.destination ?? .adNetwork).rawValue, "error", reason,
        ]
        var record = retry
        record.lastError = reason
        if let json = try? JSONCoding.encoder.encode(record) { fields += ["retry", String(decoding: json, as: UTF8.self)] }
        return [RedisCommand(fields), RedisCommand("HINCRBY", StageKeys.dispatcherStats(partition), "dead-lettered", "1")]
    }
}
