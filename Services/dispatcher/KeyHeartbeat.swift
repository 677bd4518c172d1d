import AttributionModel
import PipelineCatalog
import RedisStreams
import ServiceLifecycle
import ServiceRuntime

/// Publishes this dispatcher's public keys to the registry and keeps saying it signs with them, so
/// ingest's JWKS lists them; after a rotation the old key is no longer refreshed and drops out of the
/// JWKS once `SIGNING_KEY_GRACE_HOURS` have passed (retried postbacks signed with it still verify
/// until then). Every replica beats for its own keys, so replicas never retire each other's.
struct KeyHeartbeat: Service {
    let keys: [PostbackSigner.Key]
    let connection: RedisConnection
    let grace: Milliseconds
    let clock: @Sendable () -> Milliseconds

    /// A beat every minute, or a quarter of the grace when time is scaled that short.
    var interval: Duration { .milliseconds(max(50, min(60_000, grace / 4))) }

    func publish() async throws {
        let now = clock()
        _ = try await connection.pipeline(
            keys.flatMap {
                [
                    RedisCommand("HSET", RegistryKeys.jwks, $0.id, $0.jwk.jsonString),
                    RedisCommand("HSET", RegistryKeys.jwksSeen, $0.id, String(now)),
                ]
            })
    }

    func run() async throws {
        // Ends at once on SIGTERM: a beat is never worth delaying the shutdown.
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { break }
                // A missed beat is retried on the next one; the grace is far longer than a beat.
                try? await publish()
            }
        }
        await connection.close()
    }
}
