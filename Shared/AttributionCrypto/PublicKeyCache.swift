import CryptoPrimitives
import Synchronization

/// Parsed ad-network public keys by their registered text: parsing a JWK (JSON, then point
/// validation) for every impression cost about a fifth of the verifier's time. Bounded: when full it
/// starts over, so a rotation's old keys do not pile up.
public final class PublicKeyCache: Sendable {
    public static let shared = PublicKeyCache()
    static let capacity = 4_096
    private let keys = Mutex<[String: P256.Signing.PublicKey]>([:])

    public func key(_ text: String) throws(JWSError) -> P256.Signing.PublicKey {
        if let key = keys.withLock({ $0[text] }) { return key }
        let key = try JWK.parsePublicKey(text)
        keys.withLock { keys in
            if keys.count >= Self.capacity { keys.removeAll(keepingCapacity: true) }
            keys[text] = key
        }
        return key
    }
}
