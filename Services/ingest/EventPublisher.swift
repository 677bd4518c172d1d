import AttributionModel
import Crypto
import Foundation
import RedisStreams
import ServiceRuntime

/// Puts an accepted event on its device's partition of `events`, in one atomic script with the
/// `Idempotency-Key` record, so a retried request returns the first answer and a crash can never leave
/// a record without its event: both keys are in the device's partition (the record's scope includes
/// the device), hence in one hash slot on Redis Cluster.
///
/// The app key is checked just before, outside the script: the registry lives under its own hash tag,
/// in another slot. That is safe because the check and the publish are ordered within the request,
/// and app keys are only ever added: a key that passed the check is still valid when the event is
/// written. (Were keys ever revoked, a request in flight at the revocation would be accepted, exactly
/// as if it had arrived a moment earlier.)
struct EventPublisher: Sendable {
    let redis: RedisConnection
    let partitioning: Partitioning
    /// Replicas that must confirm the write before the 202 (`WAIT`), and for how long to wait.
    var durability = Durability()
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

    enum Caller {
        /// Impressions authenticate through their signature (checked by the verifier).
        case signedImpression
        /// Conversions and updates carry the advertised app's key, issued by the admin API.
        case app(key: String?, item: ItemIdentifier)

        /// Who the idempotency record belongs to: the app, or `-` for impressions.
        var scope: String {
            switch self {
            case .signedImpression: "-"
            case .app(_, let item): String(item)
            }
        }
    }

    /// Publishes `envelope` in `device`'s partition; answers the event id (the first one, for a
    /// retried request). An `Idempotency-Key` is remembered per route, caller and device.
    func publish(
        _ envelope: Envelope, route: String, device: String, caller: Caller, idempotencyKey: String?, body: Data
    ) async throws -> String {
        if case .app(let key, let item) = caller {
            guard let key, !key.isEmpty else {
                throw ProblemDetails(
                    .unauthorized, reason: .missingAppKey,
                    detail: "conversions and updates need the app's key: Authorization: Bearer <app key>")
            }
            let owner = try await redis.send(RedisCommand("HGET", RegistryKeys.appKeys, AppKeys.hash(key))).string
            guard let owner else {
                throw ProblemDetails(.unauthorized, reason: .invalidAppKey, detail: "the app key is not one the admin API issued")
            }
            guard owner == String(item) else {
                throw ProblemDetails(
                    .forbidden, reason: .appKeyMismatch, detail: "this app key belongs to another advertised app")
            }
        }
        if let idempotencyKey { try RequestChecks.idempotencyKey(idempotencyKey) }
        let fingerprint = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
        let partition = partitioning.of(device: device)
        // WAIT goes in the same round trip, to the same node, on the same connection: it returns once
        // that many replicas hold every write this connection made, the event included.
        let wait =
            durability.replicas > 0
            ? [RedisCommand("WAIT", String(durability.replicas), String(durability.timeoutMilliseconds))] : []
        let (reply, waited) = try await Self.script.run(
            keys: [
                StreamNames.events(partition),
                DeviceKeys.idempotency(
                    device: device, route: route, caller: caller.scope, key: idempotencyKey ?? "-", in: partition),
            ],
            arguments: [
                envelope.encoded(), Array(fingerprint.utf8), Array(String(idempotencyTTL).utf8), Array(envelope.id.utf8),
                Array((idempotencyKey == nil ? "0" : "1").utf8),
            ],
            followedBy: wait, on: redis)
        if let confirmed = waited.first, (confirmed.int ?? 0) < Int64(durability.replicas) {
            throw ProblemDetails(
                .serviceUnavailable, reason: .replicationTimeout,
                detail:
                    "the event is written but \(confirmed.int ?? 0) of \(durability.replicas) replicas confirmed it within \(durability.timeoutMilliseconds) ms; retry with the same Idempotency-Key"
            )
        }
        let parts = reply.elements.compactMap(\.string)
        switch parts.first {
        case "accepted", "replayed":
            return parts.count > 1 ? parts[1] : envelope.id
        case "conflict":
            throw ProblemDetails(
                .unprocessableContent, reason: .idempotencyKeyReused,
                detail: "this Idempotency-Key was used with a different body")
        default:
            throw ProblemDetails(.internalServerError, reason: .internalError, detail: "unexpected publish result")
        }
    }
}

extension EventPublisher {
    /// Whether `key` is an app key of `item` (for read-only calls that publish nothing).
    func appKeyMatches(_ key: String?, item: ItemIdentifier) async throws -> Bool {
        guard let key, !key.isEmpty else { return false }
        return try await redis.send(RedisCommand("HGET", RegistryKeys.appKeys, AppKeys.hash(key))).string == String(item)
    }
}

/// Per-app keys: random 32-byte secrets shown once at issue; Redis keeps only their SHA-256.
enum AppKeys {
    static func hash(_ key: String) -> String {
        SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    static func generate() -> String {
        var generator = KernelRandom()
        return "ak_" + (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}
