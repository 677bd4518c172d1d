import AttributionModel

/// Every Redis key that embeds a device identifier, in one place: the services that own them build
/// them here, and device erasure (`DELETE /v1/admin/devices/{id}`) finds them by the same shapes.
public enum DeviceKeys {
    /// attribution-winner's pool, conversions and pending reports per device and advertised app.
    public static func winnerState(device: String, app: ItemIdentifier) -> String { "winner:device:\(app):\(device)" }
    /// attribution-winner's re-engagement history of a device across apps (yearly cap).
    public static func winnerReengagements(device: String) -> String { "winner:reengagements:\(device)" }
    /// The verifier's recent views of one network's ads for one app on a device (one open view).
    public static func verifierViews(device: String, app: ItemIdentifier, network: AdNetworkIdentifier) -> String {
        "verifier:views:\(app):\(network):\(device)"
    }
    /// ingest's idempotency records of impressions, scoped per device.
    public static func impressionIdempotency(device: String, key: String) -> String {
        "ingest:idempotency:impressions:\(device):\(key)"
    }

    /// SCAN patterns matching every key above for one device (the identifier glob-escaped).
    public static func patterns(device: String) -> [String] {
        let escaped = String(device.flatMap { "*?[]\\".contains($0) ? ["\\", $0] : [$0] })
        return [
            "winner:device:*:\(escaped)",
            winnerReengagements(device: escaped),
            "verifier:views:*:*:\(escaped)",
            impressionIdempotency(device: escaped, key: "*"),
        ]
    }
}
