/// Registry keys: written by ingest's admin API (their owner), read by the verifier and dispatcher.
public enum RegistryKeys {
    /// HASH ad network id → `AdNetworkRegistration` JSON
    public static let adNetworks = "registry:ad-networks"
    /// HASH item id → `PublisherAppConfiguration` JSON
    public static let publisherApps = "registry:publisher-apps"
    /// HASH item id → `AdvertisedAppConfiguration` JSON
    public static let advertisedApps = "registry:advertised-apps"
    /// HASH item id → the app's current `ConversionValueSchema` JSON (with its version)
    public static let currentSchemas = "registry:schemas:current"
    /// HASH `<item id>:<version>` → every `ConversionValueSchema` an app ever had
    public static let schemaVersions = "registry:schemas:versions"
    /// HASH SHA-256 of an app key → the advertised app's item id (keys themselves are never stored)
    public static let appKeys = "registry:app-keys"
    /// HASH kid → public JWK JSON: the dispatcher publishes its keys here, ingest serves them.
    public static let jwks = "registry:jwks"
    /// HASH kid → ms when a dispatcher last said it signs with that key (every minute or sooner). A key
    /// no dispatcher uses any more stays in the served JWKS for `SIGNING_KEY_GRACE_HOURS` after that.
    public static let jwksSeen = "registry:jwks:seen"
}

/// Recent refusals, kept by the verifier (their owner) so an ad network or app team can ask ingest's
/// admin API why its inputs were refused: capped lists of `Rejection` JSON, newest first.
public enum RejectionLog {
    public static let capacity = 100
    public static func networkKey(_ network: String) -> String { "verifier:rejections:network:\(network)" }
    public static func appKey(_ item: String) -> String { "verifier:rejections:app:\(item)" }
}
