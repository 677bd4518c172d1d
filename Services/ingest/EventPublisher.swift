import AttributionModel
import Crypto
import Foundation
import RedisStreams
import ServiceRuntime

/// Puts an accepted event on `events`, in one atomic script with the checks that must not be split
/// from it: the app key (conversions and updates), and the `Idempotency-Key` record, so a retried
/// request returns the first answer and a crash can never leave a record without its event.
struct EventPublisher: Sendable {
    let redis: RedisConnection
    /// How long an idempotency key is remembered.
    let idempotencyTTL = Retention.idempotency

    static let script = RedisScript(
        """
        -- KEYS: events stream, app keys hash, idempotency key
        -- ARGV: envelope, app key hash ('' = none needed), expected app, request fingerprint,
        --       idempotency ttl ms, event id, use idempotency ('1'/'0')
        if ARGV[2] ~= '' then
            local app = redis.call('HGET', KEYS[2], ARGV[2])
            if not app then return {'unauthorized'} end
            if app ~= ARGV[3] then return {'forbidden'} end
        end
        if ARGV[7] == '1' then
            local existing = redis.call('GET', KEYS[3])
            if existing then
                local space = string.find(existing, ' ', 1, true)
                if string.sub(existing, 1, space - 1) ~= ARGV[4] then return {'conflict'} end
                return {'replayed', string.sub(existing, space + 1)}
            end
        end
        redis.call('XADD', KEYS[1], '*', 'e', ARGV[1])
        if ARGV[7] == '1' then
            redis.call('SET', KEYS[3], ARGV[4] .. ' ' .. ARGV[6], 'PX', ARGV[5])
        end
        return {'accepted', ARGV[6]}
        """)

    enum Caller {
        /// Impressions authenticate through their signature (checked by the verifier).
        case signedImpression
        /// Conversions and updates carry the advertised app's key, issued by the admin API.
        case app(key: String?, item: ItemIdentifier)
    }

    /// Publishes `envelope`; answers 202 with the event id (the first one, for a retried request).
    /// `scope` keeps one caller's idempotency keys apart from another's (the app, or the device).
    func publish(_ envelope: Envelope, route: String, scope: String, caller: Caller, idempotencyKey: String?, body: Data)
        async throws -> String
    {
        var keyHash = ""
        var expectedApp = ""
        if case .app(let key, let item) = caller {
            guard let key, !key.isEmpty else {
                throw ProblemDetails(
                    .unauthorized, reason: .missingAppKey,
                    detail: "conversions and updates need the app's key: Authorization: Bearer <app key>")
            }
            keyHash = AppKeys.hash(key)
            expectedApp = String(item)
        }
        if let idempotencyKey { try RequestChecks.idempotencyKey(idempotencyKey) }
        let fingerprint = SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
        let reply = try await Self.script.run(
            keys: [
                StreamNames.events, RegistryKeys.appKeys,
                StageKeys.idempotency(route: route, scope: scope, key: idempotencyKey ?? "-"),
            ],
            arguments: [
                envelope.encoded(), Array(keyHash.utf8), Array(expectedApp.utf8), Array(fingerprint.utf8),
                Array(String(idempotencyTTL).utf8), Array(envelope.id.utf8), Array((idempotencyKey == nil ? "0" : "1").utf8),
            ],
            on: redis)
        let parts = reply.elements.compactMap(\.string)
        switch parts.first {
        case "accepted", "replayed":
            return parts.count > 1 ? parts[1] : envelope.id
        case "unauthorized":
            throw ProblemDetails(.unauthorized, reason: .invalidAppKey, detail: "the app key is not one the admin API issued")
        case "forbidden":
            throw ProblemDetails(.forbidden, reason: .appKeyMismatch, detail: "this app key belongs to another advertised app")
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
