import AttributionModel
import Foundation
import RedisStreams
import ServiceRuntime

/// One batch of due postbacks and due retries: sign the new ones, POST all of them concurrently,
/// then in one transaction acknowledge them, schedule the failures' retries (≤ 9 within 9 days) and
/// dead-letter the exhausted. A retry resends the stored bytes, byte for byte.
struct DispatcherStage: StreamStage {
    let policy: TimePolicy
    let signer: PostbackSigner
    let delivery: PostbackDelivery

    static let retries = DelayedQueue(name: DelayedQueueNames.deliveryRetries, target: StreamNames.postbacks)
    static let statsKey = "dispatcher:stats"

    /// The batch decoded once, with the ad networks whose postback URLs it needs.
    struct Batch: Sendable {
        var envelopes: [Envelope?]
        var networks: [String]
    }

    func prepare(_ entries: [StreamEntry]) -> Batch {
        let envelopes = entries.map { try? Envelope.decode($0.message) }
        var seen = Set<String>()
        let networks = envelopes.compactMap { envelope -> String? in
            guard case .postbackDue(let order)? = envelope?.body else { return nil }
            return order.payload.adNetworkIdentifier.rawValue
        }.filter { seen.insert($0).inserted }
        return Batch(envelopes: envelopes, networks: networks)
    }

    func reads(for batch: Batch) -> StageReads {
        StageReads(commands: batch.networks.isEmpty ? [] : [RedisCommand(["HMGET", RegistryKeys.adNetworks] + batch.networks)])
    }

    /// What one entry amounts to before delivery: a body to send somewhere, or a reason it cannot be.
    enum Work {
        case send(DeliveryRetry)
        case undeliverable(postbackIdentifier: String, error: String)
        case invalid(String)
    }

    func decide(_ batch: Batch, state: [RedisReply]) async -> [StageOutcome] {
        var urls: [String: String] = [:]
        for (id, reply) in zip(batch.networks, state.first?.elements ?? []) {
            if case .bulk(let bytes) = reply,
                let registration = try? JSONCoding.decoder.decode(AdNetworkRegistration.self, from: Data(bytes))
            {
                urls[id] = registration.postbackURL
            }
        }
        let now = WallClock.nowMilliseconds()
        let work: [Work] = batch.envelopes.map { envelope in
            guard let envelope else { return .invalid("not a pipeline envelope") }
            switch envelope.body {
            case .postbackDue(let order):
                let id = order.payload.postbackIdentifier
                guard let url = urls[order.payload.adNetworkIdentifier.rawValue] else {
                    return .undeliverable(
                        postbackIdentifier: id, error: "ad network \(order.payload.adNetworkIdentifier) is not registered")
                }
                do {
                    let body = try signer.body(for: order)
                    return .send(
                        DeliveryRetry(
                            postbackIdentifier: id, url: url, body: body, attempts: 0, firstAttemptAt: now, lastError: ""))
                } catch { return .invalid("signing failed: \(error)") }
            case .deliveryRetry(let retry):
                return .send(retry)
            default:
                return .invalid("dispatcher takes due postbacks and retries, not \(envelope.type.rawValue)")
            }
        }
        let errors = await deliverAll(work)
        var generator = SystemRandomNumberGenerator()
        return zip(work, errors).map { item, error -> StageOutcome in
            switch item {
            case .invalid(let reason):
                return .failed(reason)
            case .undeliverable(let id, let reason):
                return .write(deadLetter(id: id, reason: reason, retry: nil))
            case .send(var attempt):
                attempt.attempts += 1
                guard let error else {
                    return .write([RedisCommand("HINCRBY", Self.statsKey, "delivered", "1")])
                }
                attempt.lastError = error
                guard let delay = RetrySchedule.delay(afterFailedAttempts: attempt.attempts, policy: policy, using: &generator)
                else { return .write(deadLetter(id: attempt.postbackIdentifier, reason: error, retry: attempt)) }
                let due = now + delay
                let message = Envelope(time: due, body: .deliveryRetry(attempt))
                return .write(
                    Self.retries.schedule(id: attempt.postbackIdentifier, dueAtMilliseconds: due, message: message.encoded())
                        + [RedisCommand("HINCRBY", Self.statsKey, "failed-attempts", "1")])
            }
        }
    }

    /// POSTs every sendable entry at once (the HTTP client pools connections per host).
    func deliverAll(_ work: [Work]) async -> [String?] {
        await withTaskGroup(of: (Int, String?).self) { group in
            for (index, item) in work.enumerated() {
                guard case .send(let attempt) = item else { continue }
                group.addTask { (index, await delivery.post(attempt.body, to: attempt.url)) }
            }
            var errors = [String?](repeating: nil, count: work.count)
            for await (index, error) in group { errors[index] = error }
            return errors
        }
    }

    func deadLetter(id: String, reason: String, retry: DeliveryRetry?) -> [RedisCommand] {
        var fields = ["XADD", StreamNames.deliveriesDead, "*", "postback-identifier", id, "error", reason]
        if let retry, let json = try? JSONCoding.encoder.encode(retry) {
            fields += ["retry", String(decoding: json, as: UTF8.self)]
        }
        return [RedisCommand(fields), RedisCommand("HINCRBY", Self.statsKey, "dead-lettered", "1")]
    }
}
