/// Registry keys: written by ingest's admin API (their owner), read by the verifier and dispatcher.
public enum RegistryKeys {
    /// HASH ad network id → `AdNetworkRegistration` JSON
    public static let adNetworks = "registry:ad-networks"
    /// HASH item id → `PublisherAppConfiguration` JSON
    public static let publisherApps = "registry:publisher-apps"
    /// HASH item id → `AdvertisedAppConfiguration` JSON
    public static let advertisedApps = "registry:advertised-apps"
    /// HASH kid → public JWK JSON: the dispatcher publishes its keys here, ingest serves them.
    public static let jwks = "registry:jwks"
}
