import AttributionModel
import CryptoPrimitives
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// Puts accepted events on their devices' partitions of `events`: an event without an `Idempotency-Key`
/// is one XADD; one with a key is written in one atomic script with its `Idempotency-Key` record, so a
/// retried request returns the first answer and a crash can never leave a record without its event:
/// both keys are in the device's partition (the record's scope includes the device), hence in one hash
/// slot on Redis Cluster. The writes of concurrent requests share pipelined round trips (`PublishQueue`).
///
/// The app key is checked just before, outside the script: the registry lives under its own hash tag,
/// in another slot. A request in flight when its key is revoked is accepted, exactly as if it had
/// arrived a moment earlier (and a replica remembers a key's app for up to 10 s: `AppKeyOwners`).
struct EventPublisher: Sendable {
    let queue: PublishQueue
    let appKeys: AppKeyOwners
    let partitioning: Partitioning
    /// How long an idempotency key is remembered.
    let idempotencyTTL = Retention.idempotency

    static let script = RedisScript(
        """
        -- KEYS: events stream, idempotency key
        -- ARGV: envelope, request fingerprint, idempotency ttl ms, event id, use idempotency ('1'/'0')
        if ARGV[5] == '1' then
            local existing = redis.call('GET', KEYS[2])
            if existing then
                local space = string.find(existing, ' ', 1, true)
                if string.sub(existing, 1, space - 1) ~= ARGV[2] then return {'conflict'} end
                return {'replayed', string.sub(existing, space + 1)}
            end
        end
        redis.call('XADD', KEYS[1], '*', 'e', ARGV[1])
        if ARGV[5] == '1' then
            redis.call('SET', KEYS[2], ARGV[2] .. ' ' .. ARGV[4], 'PX', ARGV[3])
        end
        return {'accepted', ARGV[4]}
        """)

    /// `INGEST_WAIT_REPLICAS` resolved, and `INGEST_WAIT_TIMEOUT_MS`.
    struct Durability: Sendable {
        var replicas = 0
        var timeoutMilliseconds: Milliseconds = 1_000
    }

    enum Caller: Sendable {
        /// Impressions authenticate through their signature (checked by the verifier); `network` is the
        /// ad network the signature claims (its `kid`).
        case signedImpression(network: String)
        /// Conversions and updates carry the advertised app's key, issued by the admin API.
        case app(key: String?, item: ItemIdentifier)

        /// Who the idempotency record belongs to: the app's item id, or `kid=<network>` for impressions
        /// (never all digits, so never an app's scope).
        var scope: String {
            switch self {
            case .signedImpression(let network): "kid=\(network)"
            case .app(_, let item): String(item)
            }
        }
    }

    /// A keyed event's id and fingerprint. The id follows from the route, the key and the request's
    /// bytes, so a retry is the same event even when it finds no record of its first copy (a failover
    /// discarded the record after the verifier had seen that copy): the impression's replay marker,
    /// held by that id, lets the retry pass, and a re-engagement keeps its conversion tag.
    struct Identity: Sendable {
        var id: String
        /// SHA-256 of the request (or batch item) bytes: the same key with other bytes is a conflict.
        var fingerprint: String

        /// An event without a key: a random id, nothing to compare a retry with.
        static func unkeyed() -> Self { Self(id: RandomUUID.make(), fingerprint: "-") }

        static func keyed(route: String, key: String, bytes: Data) -> Self {
            let fingerprint = Hex.encode(SHA256.hash(data: bytes))
            let parts = ["event-identifier", route, key, fingerprint].map { $0 + "\n" }.joined()
            return Self(id: RandomUUID.shaped(SHA256.hash(data: Data(parts.utf8))), fingerprint: fingerprint)
        }
    }

    /// One event, decoded and validated, ready to publish.
    struct Prepared: Sendable {
        var envelope: Envelope
        /// The route's name in idempotency records (`impressions`, `conversions`, …).
        var route: String
        var device: String
        var caller: Caller
        var idempotencyKey: String?
        /// `Identity.fingerprint`, or `-` without a key.
        var fingerprint: String
        /// A re-engagement: its id is also its `conversion-tag`.
        var tagged = false
    }

    /// Checks app keys (once per distinct key), then writes every event; one answer per event, in order:
    /// its event id, or why it was not written. Throws only when Redis could not be reached at all.
    func publish(_ events: [Prepared]) async throws -> [Result<String, ProblemDetails>] {
        var results = [Result<String, ProblemDetails>?](repeating: nil, count: events.count)
        var owners: [String: String?] = [:]
        for (index, event) in events.enumerated() {
            guard case .app(let key, let item) = event.caller else { continue }
            guard let key, !key.isEmpty else {
                results[index] = .failure(.missingAppKey)
                continue
            }
            if owners[key] == nil { owners[key] = .some(try await appKeys.owner(of: key)) }
            if let refusal = AppKeyOwners.refusal(owner: owners[key] ?? nil, item: item) { results[index] = .failure(refusal) }
        }
        var writes: [Int: PublishQueue.Write] = [:]
        for index in events.indices where results[index] == nil {
            do {
                writes[index] = try write(events[index])
            } catch {
                // Never an empty message on `events`: the event is answered 500, nothing of it written.
                results[index] = .failure(
                    ProblemDetails(.internalServerError, reason: .internalError, detail: "the event could not be encoded"))
            }
        }
        let writable = writes.keys.sorted()
        let outcomes = try await queue.publish(writable.map { writes[$0]! })
        for (index, outcome) in zip(writable, outcomes) { results[index] = answer(outcome, for: events[index]) }
        return results.map { $0! }
    }

    private func write(_ event: Prepared) throws -> PublishQueue.Write {
        let partition = partitioning.of(device: event.device)
        // Without an Idempotency-Key there is no record to keep with the event: one XADD, no script.
        guard event.idempotencyKey != nil else {
            return PublishQueue.Write(
                command: StreamCommands.add(StreamNames.events(partition), message: try event.envelope.encoded()),
                group: partition.index)
        }
        let call = RedisScript.Call(
            keys: [
                StreamNames.events(partition),
                DeviceKeys.idempotency(
                    device: event.device, route: event.route, caller: event.caller.scope, key: event.idempotencyKey ?? "-",
                    in: partition),
            ],
            arguments: [
                try event.envelope.encoded(), Array(event.fingerprint.utf8), Array(String(idempotencyTTL).utf8),
                Array(event.envelope.id.utf8), Array((event.idempotencyKey == nil ? "0" : "1").utf8),
            ])
        return PublishQueue.Write(call: call, group: partition.index)
    }

    private func answer(_ outcome: PublishQueue.Outcome, for event: Prepared) -> Result<String, ProblemDetails> {
        if let message = outcome.reply.errorMessage {
            // The script did not run to its end (OOM, a node failing over): nothing of it was written.
            return .failure(
                ProblemDetails(
                    .serviceUnavailable, reason: .redisUnreachable,
                    detail: "Redis refused the write (\(message.prefix(80))); retry with the same Idempotency-Key"))
        }
        let parts = outcome.reply.elements.compactMap(\.string)
        // A conflict wrote nothing, whatever the replicas say.
        if parts.first != "conflict", let confirmed = outcome.replicas, confirmed < queue.replicas {
            var problem = ProblemDetails(
                .serviceUnavailable, reason: .replicationTimeout,
                detail:
                    "the event is written but \(confirmed) of \(queue.replicas) replicas confirmed it within \(queue.waitMilliseconds) ms; retry with the same Idempotency-Key"
            )
            // A keyed event replayed by this very write names its first id.
            problem.eventIdentifier = parts.count > 1 ? parts[1] : event.envelope.id
            return .failure(problem)
        }
        // A plain XADD answers with the entry id.
        if event.idempotencyKey == nil, outcome.reply.string != nil { return .success(event.envelope.id) }
        switch parts.first {
        case "accepted", "replayed":
            return .success(parts.count > 1 ? parts[1] : event.envelope.id)
        case "conflict":
            return .failure(
                ProblemDetails(
                    .unprocessableContent, reason: .idempotencyKeyReused,
                    detail: "this Idempotency-Key was used with a different body"))
        default:
            return .failure(ProblemDetails(.internalServerError, reason: .internalError, detail: "unexpected publish result"))
        }
    }
}
