import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// One batch of due postbacks and due retries: the model's `DispatcherStep` fans each out to its
/// destinations (signing new ones once with this process's key), every delivery is POSTed concurrently
/// through its destination's lane (`DestinationLanes`: bounded per destination, a circuit breaker),
/// the step judges each answer, and one transaction acknowledges the batch, schedules each failed
/// destination's retry and dead-letters the exhausted. The batch waits for answers at most
/// `answerWait`: an attempt still under way then is written as an in-flight record and finishes on its
/// own (`LateOutcomes`), so a slow destination never holds the next batch.
struct DispatcherStage: StreamStage {
    let step: DispatcherStep
    let signer: PostbackSigner
    let delivery: PostbackDelivery
    let partitioning: Partitioning
    let registryCache: RegistryCache
    let lateOutcomes: LateOutcomes
    let clock: @Sendable () -> Milliseconds
    /// How long a batch waits for its attempts' answers before handing the rest over.
    static let answerWaitMilliseconds: Milliseconds = 200
    static let answerWait: Duration = .milliseconds(answerWaitMilliseconds)

    /// The batch decoded once, with the ad networks and advertised apps whose registrations it needs.
    struct Batch: Sendable {
        var envelopes: [Envelope?]
        var partitions: [Partition]
        var networks: [String]
        var apps: [String]
        var registry: RegistryReads
        /// Counts down once the batch's transaction committed: its in-flight records exist from then on.
        var committed = Countdown(1)
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

    func committed(_ batch: Batch) {
        batch.committed.end()
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
        let attempts = startAll(deliveries)
        var answers = await attempts.answers.collect(within: Self.answerWait)[...]
        // Waits count from the failure, not from the batch's start: a slow POST must not shorten the next wait.
        let answeredAt = clock()
        let leaseDue = answeredAt + (await delivery.lanes.lease())
        var generator = KernelRandom()
        var attemptIndex = 0
        return zip(work, batch.partitions).map { item, partition -> StageOutcome in
            switch item {
            case .retry(let reason):
                return .failed(reason)
            case .done(let work):
                var commands = work.undeliverable.flatMap { deadLetter($0.delivery, reason: $0.reason, in: partition) }
                var counts: [StageCount] = []
                for lost in work.lost {
                    let (verdict, count) = step.verdict(
                        for: lost, response: DispatcherStep.lostAttempt, now: answeredAt, using: &generator)
                    counts.append(StageCount(count))
                    commands += self.commands(for: verdict, in: partition)
                }
                for attempt in work.deliveries {
                    let index = attemptIndex
                    attemptIndex += 1
                    switch answers.removeFirst() {
                    case .answered(let response):
                        let (verdict, count) = step.verdict(for: attempt, response: response, now: answeredAt, using: &generator)
                        counts.append(StageCount(count))
                        commands += self.commands(for: verdict, in: partition)
                    case .deferred(let until, let reason):
                        commands += self.commands(
                            for: step.deferral(of: attempt, until: until, reason: reason, now: answeredAt), in: partition,
                            deferred: true)
                    case nil:
                        let record = DispatcherStep.inFlightRecord(for: attempt)
                        commands += scheduled(record, at: leaseDue, in: partition)
                        finishLate(
                            attempt, task: attempts.tasks[index], leaseDue: leaseDue, committed: batch.committed, in: partition)
                    }
                }
                return .write(commands, counts: counts)
            }
        }
    }

    /// The commands that record a verdict in `partition`; `deferred`: a delivery held back, not attempted
    /// (counted as `deferred`, not as a failed attempt).
    func commands(for verdict: DispatcherStep.Verdict, in partition: Partition, deferred: Bool = false) -> [RedisCommand] {
        let stats = StageKeys.dispatcherStats(partition)
        switch verdict {
        case .delivered:
            return [RedisCommand("HINCRBY", stats, "delivered", "1")]
        case .retry(let retry, let due):
            return scheduled(retry, at: due, in: partition)
                + [RedisCommand("HINCRBY", stats, deferred ? "deferred" : "failed-attempts", "1")]
        case .dead(let record, let reason):
            return deadLetter(record, reason: reason, in: partition)
        }
    }

    /// Starts every attempt at once; `PostbackDelivery` takes each through its destination's lane.
    func startAll(_ deliveries: [DeliveryRetry]) -> (tasks: [Task<PostbackDelivery.Answer, Never>], answers: BatchAnswers) {
        let answers = BatchAnswers(count: deliveries.count)
        let tasks = deliveries.enumerated().map { index, attempt in
            Task(executorPreference: EventLoopTaskExecutor(delivery.poster.eventLoopGroup.next())) {
                let answer = await delivery.post(attempt.body, to: attempt.url, answerWait: Self.answerWaitMilliseconds) {
                    answers.release(index)
                }
                answers.set(index, answer)
                return answer
            }
        }
        return (tasks, answers)
    }

    /// Writes the outcome of an attempt its batch handed over, once the batch committed (its in-flight
    /// record exists) and the attempt ended.
    func finishLate(
        _ attempt: DeliveryRetry, task: Task<PostbackDelivery.Answer, Never>, leaseDue: Milliseconds, committed: Countdown,
        in partition: Partition
    ) {
        let step = self.step
        let lateOutcomes = self.lateOutcomes
        let clock = self.clock
        lateOutcomes.pending.begin()
        Task {
            defer { lateOutcomes.pending.end() }
            let answer = await task.value
            guard await committed.wait(within: .milliseconds(max(0, leaseDue - clock()))) else { return }
            var generator = KernelRandom()
            let verdict: DispatcherStep.Verdict
            var deferred = false
            var count: StepCount?
            switch answer {
            case .answered(let response):
                let judged = step.verdict(for: attempt, response: response, now: clock(), using: &generator)
                (verdict, count) = (judged.0, judged.1)
            case .deferred(let until, let reason):
                verdict = step.deferral(of: attempt, until: until, reason: reason, now: clock())
                deferred = true
            }
            let written = await lateOutcomes.write(
                verdict, deferred: deferred, id: attempt.deliveryIdentifier, leaseDue: leaseDue, in: partition)
            if written, let count { StageMetrics().committed([StageCount(count)]) }
        }
    }

    /// `retry` in the partition's retry queue, due at `due`; or, should its message fail to encode, the
    /// delivery dead-lettered with that reason: never an empty message in the queue, and never the
    /// entry failed after its postbacks were POSTed (a redone entry would POST them again).
    func scheduled(_ retry: DeliveryRetry, at due: Milliseconds, in partition: Partition) -> [RedisCommand] {
        do {
            return DelayedQueues.deliveryRetries(partition).schedule(
                id: retry.deliveryIdentifier, dueAtMilliseconds: due, message: try Self.message(retry, due: due))
        } catch {
            return deadLetter(retry, reason: Self.unencodable(error), in: partition)
        }
    }

    /// The `delivery.retry` message of `retry`, due at `due`, as the retry queue holds it.
    static func message(_ retry: DeliveryRetry, due: Milliseconds) throws -> [UInt8] {
        try Envelope(id: retry.deliveryIdentifier, time: due, body: .deliveryRetry(retry)).encoded()
    }

    /// The dead letter's reason for a retry whose message could not be encoded.
    static func unencodable(_ error: any Error) -> String { "the retry could not be encoded: \(error)" }

    func deadLetter(_ retry: DeliveryRetry, reason: String, in partition: Partition) -> [RedisCommand] {
        [
            RedisCommand(["XADD", StreamNames.deliveriesDead(partition), "*"] + Self.deadLetterFields(retry, reason: reason)),
            RedisCommand("HINCRBY", StageKeys.dispatcherStats(partition), "dead-lettered", "1"),
        ]
    }

    /// A dead letter's fields: the postback, its destination, the last error and the record to replay.
    static func deadLetterFields(_ retry: DeliveryRetry, reason: String) -> [String] {
        var fields = [
            "postback-identifier", retry.postbackIdentifier, "destination", retry.destination.rawValue, "error",
            reason,
        ]
        var record = retry
        record.lastError = reason
        if let json = try? JSONCoding.encoder.encode(record) { fields += ["retry", String(decoding: json, as: UTF8.self)] }
        return fields
    }
}
