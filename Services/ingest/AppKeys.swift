import AttributionModel
import Foundation
import HTTPAPI
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import Synchronization

/// Which advertised app an app key belongs to, read from the registry and remembered for a few
/// seconds, so a busy app's requests do not each cost a registry round trip. Only owners found are
/// remembered (a key issued a moment ago works at once); a revoked key keeps working for up to
/// `lifetime` (10 s) on a replica that remembered it, as the OpenAPI document says.
///
/// A lookup is a round trip outside the publish queue, so its age is kept too (`oldestLookup`): when
/// the link to Redis is cut as remembered owners expire, requests wait here, and `Admission` must see
/// that as the stall it is rather than let every new request join them.
final class AppKeyOwners: Sendable {
    let redis: RedisConnection
    let lifetime: Duration
    let capacity: Int
    private let remembered = Mutex<[String: (owner: String, until: ContinuousClock.Instant)]>([:])
    private let lookups = Mutex<(next: Int, started: [Int: ContinuousClock.Instant])>((0, [:]))

    init(redis: RedisConnection, lifetime: Duration = .seconds(10), capacity: Int = 10_000) {
        self.redis = redis
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// The advertised app `key` was issued for, as its decimal id; nil when no such key was issued.
    func owner(of key: String) async throws -> String? {
        let hash = IssuedSecrets.hash(key)
        let now = ContinuousClock.now
        if let hit = remembered.withLock({ $0[hash] }), hit.until > now { return hit.owner }
        let lookup = lookups.withLock { state in
            state.next += 1
            state.started[state.next] = now
            return state.next
        }
        defer { _ = lookups.withLock { $0.started.removeValue(forKey: lookup) } }
        guard let owner = try await redis.send(RedisCommand("HGET", RegistryKeys.appKeys, hash)).string else { return nil }
        remembered.withLock { cache in
            // Bounded: an attacker with many valid keys could only make it start over.
            if cache.count >= capacity { cache.removeAll(keepingCapacity: true) }
            cache[hash] = (owner, now + lifetime)
        }
        return owner
    }

    /// How long the oldest lookup under way has waited for Redis; zero when none is.
    func oldestLookup(now: ContinuousClock.Instant = .now) -> Duration {
        lookups.withLock { state in state.started.values.min().map { now - $0 } ?? .zero }
    }

    /// Why a key whose owner is `owner` may not report for `item`: nil when it may; 401
    /// `invalid-app-key` when no such key was issued, 403 `app-key-mismatch` when another app's. The
    /// event routes and `evaluate` answer alike.
    static func refusal(owner: String?, item: ItemIdentifier) -> ProblemDetails? {
        guard let owner else {
            return ProblemDetails(.unauthorized, reason: .invalidAppKey, detail: "the app key is not one the admin API issued")
        }
        guard owner == String(item) else {
            return ProblemDetails(
                .forbidden, reason: .appKeyMismatch, detail: "this app key belongs to another advertised app, not \(item)")
        }
        return nil
    }
}
