import AttributionModel
import Foundation
import Metrics
import RedisStreams
import ServiceRuntime

/// One batch of due postbacks and due retries: sign the new ones once, fan each out to its
/// destinations (the ad network; the advertiser's copy endpoint for winners), POST them all
/// concurrently (bounded per host), then in one transaction acknowledge them, schedule each failed
/// destination's retry (≤ 9 within 9 days) and dead-letter the exhausted. A retry resends the stored
/// bytes, byte for byte; a replayed dead letter is signed again with the current key.
struct DispatcherStage: StreamStage {
    let policy: TimePolicy
    let signer: PostbackSigner
    let delivery: PostbackDelivery

    static let retries = DelayedQueue(name: DelayedQueueNames.deliveryRetries, target: StreamNames.postbacks)
    static let statsKey = "dispatcher:stats"

    /// The batch decoded once, with the ad networks and advertised apps whose registrations it needs.
    struct Batch: Sendable {
        var envelopes: [Envelope?]
        var networks: [String]
        var apps: [String]
    }

    func prepare(_ entries: [StreamEntry]) -> Batch {
        let envelopes = entries.map { try? Envelope.decode($0.message) }
        var networks: [String] = []
        var apps: [String] = []
        for case .postbackDue(let order)? in envelopes.map({ $0?.body }) {
            networks.append(order.payload.adNetworkIdentifier.rawValue)
            if order.payload.didWin { apps.append(String(order.payload.advertisedItemIdentifier)) }
        }
        return Batch(envelopes: envelopes, networks: Self.unique(networks), apps: Self.unique(apps))
    }

    static func unique(_ values: [String]) -> [String] {
        var seen = Set<String>()
        return values.filter { seen.insert($0).inserted }
    }

    func reads(for batch: Batch) -> StageReads {
        StageReads(commands: [
            RedisCommand(["HMGET", RegistryKeys.adNetworks] + (batch.networks.isEmpty ? ["-"] : batch.networks)),
            RedisCommand(["HMGET", RegistryKeys.advertisedApps] + (batch.apps.isEmpty ? ["-"] : batch.apps)),
        ])
    }

    /// What one entry amounts to before delivery.
    enum Work {
        /// Deliveries to make, plus destinations that cannot be delivered at all (dead-lettered at once).
        case send([DeliveryRetry], undeliverable: [(DeliveryRetry, String)])
        case invalid(String)
    }

    func decide(_ batch: Batch, state: [RedisReply]) async -> [StageOutcome] {
        let networks: [String: AdNetworkRegistration] = Self.registrations(batch.networks, state.first)
        let apps: [String: AdvertisedAppConfiguration] = Self.registrations(batch.apps, state.dropFirst().first)
        let now = WallClock.nowMilliseconds()
        let work = batch.envelopes.map { envelope in
            self.work(for: envelope, networks: networks, apps: apps, now: now)
        }
        let deliveries = work.flatMap { item -> [DeliveryRetry] in
            if case .send(let deliveries, _) = item { return deliveries }
            return []
        }
        var results = await deliverAll(deliveries)[...]
        // Waits count from the failure, not from the batch's start: a slow POST must not shorten the next wait.
        let failedAt = WallClock.nowMilliseconds()
        var generator = SystemRandomNumberGenerator()
        return work.map { item -> StageOutcome in
            switch item {
            case .invalid(let reason):
                return .failed(reason)
            case .send(let deliveries, let undeliverable):
                var commands = undeliverable.flatMap { deadLetter($0.0, reason: $0.1) }
                for var attempt in deliveries {
                    let result = results.removeFirst()
                    attempt.attempts += 1
                    Counter(
                        label: "dispatcher_deliveries_total",
                        dimensions: [("outcome", result.outcome), ("attempt", String(min(attempt.attempts, 10)))]
                    ).increment()
                    guard let error = result.error else {
                        commands.append(RedisCommand("HINCRBY", Self.statsKey, "delivered", "1"))
                        continue
                    }
                    attempt.lastError = error
                    guard !result.permanent,
                        let delay = RetrySchedule.delay(afterFailedAttempts: attempt.attempts, policy: policy, using: &generator)
                    else {
                        commands += deadLetter(attempt, reason: error)
                        continue
                    }
                    let due = failedAt + delay
                    commands +=
                        Self.retries.schedule(
                            id: attempt.deliveryIdentifier, dueAtMilliseconds: due,
                            message: Envelope(time: due, body: .deliveryRetry(attempt)).encoded())
                        + [RedisCommand("HINCRBY", Self.statsKey, "failed-attempts", "1")]
                }
                return .write(commands)
            }
        }
    }

    /// The deliveries one entry makes: a due postback is signed and fanned out to its destinations; a
    /// retry is one delivery as stored (a replay is signed again first).
    func work(
        for envelope: Envelope?, networks: [String: AdNetworkRegistration], apps: [String: AdvertisedAppConfiguration],
        now: Milliseconds
    ) -> Work {
        guard let envelope else { return .invalid("not a pipeline envelope") }
        switch envelope.body {
        case .postbackDue(let order):
            let body: String
            do { body = try signer.body(for: order) } catch { return .invalid("signing failed: \(error)") }
            let payload = order.payload
            func delivery(_ destination: PostbackDestination, _ url: String) -> DeliveryRetry {
                DeliveryRetry(
                    postbackIdentifier: payload.postbackIdentifier, destination: destination, url: url, body: body, attempts: 0,
                    firstAttemptAt: now, lastError: "", order: order)
            }
            var deliveries: [DeliveryRetry] = []
            var undeliverable: [(DeliveryRetry, String)] = []
            if let url = networks[payload.adNetworkIdentifier.rawValue]?.postbackURL {
                deliveries.append(delivery(.adNetwork, url))
            } else {
                undeliverable.append((delivery(.adNetwork, ""), "ad network \(payload.adNetworkIdentifier) is not registered"))
            }
            if let app = apps[String(payload.advertisedItemIdentifier)],
                CopyEndpoint.applies(to: app, conversionType: payload.conversionType, didWin: payload.didWin),
                let url = app.attributionCopyEndpoint.flatMap(CopyEndpoint.reportURL(for:))
            {
                deliveries.append(delivery(.advertiserCopy, url))
            }
            return .send(deliveries, undeliverable: undeliverable)
        case .deliveryRetry(var retry):
            if retry.replayed == true, let order = retry.order {
                // A replay may come long after the key that signed it was retired from the JWKS.
                do { retry.body = try signer.body(for: order) } catch { return .invalid("signing failed: \(error)") }
                retry.firstAttemptAt = now
                retry.replayed = nil
            }
            return .send([retry], undeliverable: [])
        default:
            return .invalid("dispatcher takes due postbacks and retries, not \(envelope.type.rawValue)")
        }
    }

    static func registrations<T: Decodable>(_ fields: [String], _ reply: RedisReply?) -> [String: T] {
        var found: [String: T] = [:]
        for (field, value) in zip(fields, reply?.elements ?? []) {
            if case .bulk(let bytes) = value, let decoded = try? JSONCoding.decoder.decode(T.self, from: Data(bytes)) {
                found[field] = decoded
            }
        }
        return found
    }

    /// POSTs every delivery at once; `PostbackDelivery` bounds the concurrency per host.
    func deliverAll(_ deliveries: [DeliveryRetry]) async -> [PostbackDelivery.Result] {
        await withTaskGroup(of: (Int, PostbackDelivery.Result).self) { group in
            for (index, attempt) in deliveries.enumerated() {
                group.addTask { (index, await delivery.post(attempt.body, to: attempt.url)) }
            }
            var results = [PostbackDelivery.Result](repeating: .delivered, count: deliveries.count)
            for await (index, result) in group { results[index] = result }
            return results
        }
    }

    func deadLetter(_ retry: DeliveryRetry, reason: String) -> [RedisCommand] {
        var fields = [
            "XADD", StreamNames.deliveriesDead, "*", "postback-identifier", retry.postbackIdentifier, "destination",
            (retry.destination ?? .adNetwork).rawValue, "error", reason,
        ]
        var record = retry
        record.lastError = reason
        if let json = try? JSONCoding.encoder.encode(record) { fields += ["retry", String(decoding: json, as: UTF8.self)] }
        return [RedisCommand(fields), RedisCommand("HINCRBY", Self.statsKey, "dead-lettered", "1")]
    }
}
