/// Which of the dispatchers' published public keys the JWKS serves: every key a dispatcher still signs
/// with, and a retired one until `grace` has passed since a dispatcher last said it signed with it (so
/// a retried postback's stored bytes still verify). A key nobody has reported on yet is served.
public enum KeySetPublication {
    /// `SIGNING_KEY_GRACE_HOURS` in milliseconds: scaled by the time policy like the retries it covers.
    public static func grace(_ configured: Duration, policy: TimePolicy) -> Milliseconds { policy.milliseconds(configured) }

    /// `KEY_ROTATION_GRACE_HOURS` in milliseconds: an ad network's previous key stays valid this long in
    /// real time (the network's own devices sign with it; the pipeline's time scale does not apply).
    public static func rotationGrace(_ configured: Duration) -> Milliseconds { TimePolicy.realTime.milliseconds(configured) }

    /// `published`: kid → public JWK JSON; `lastSigned`: kid → ms a dispatcher last signed with it.
    /// The served JWKs, in a stable order.
    public static func served(
        published: [String: String], lastSigned: [String: Milliseconds], now: Milliseconds, grace: Milliseconds
    ) -> [String] {
        published.filter { kid, _ in lastSigned[kid].map { now - $0 <= grace } ?? true }.values.sorted()
    }
}

extension DeliveryRetry {
    /// An operator's replay of a dead letter: a fresh series of attempts, signed again by the dispatcher
    /// with its current key (same postback-identifier, so receivers deduplicate).
    public func replay() -> DeliveryRetry {
        var retry = self
        retry.attempts = 0
        retry.lastError = ""
        retry.replayed = true
        return retry
    }
}
