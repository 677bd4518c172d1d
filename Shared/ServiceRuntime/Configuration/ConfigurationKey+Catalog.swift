import AttributionModel
import Logging
import RedisStreams

/// Every configuration key the services read, in one catalog: the configuration reference's table and the
/// compose check are tested against it, so a key cannot be read without being documented.
extension ConfigurationKey {
    /// The catalog, in the order docs/reference/configuration.md lists it.
    public static let all: [ConfigurationKey] = [
        row(.redisURL), row(.redisPasswordFile), row(.redisTLSCAFile), row(.redisTLSCertificateFile), row(.redisTLSKeyFile),
        row(.redisTLSServerName), row(.redisCluster), row(.partitions), row(.timeScale), row(.logLevel),
        row(.logFormat),
        row(.httpHost), row(.httpPort), row(.operationsHTTPHost), row(.operationsHTTPPort),
        row(.httpIdleTimeoutMilliseconds),
        row(.consumerName), row(.consumers), row(.batchSize), row(.claimIdleMilliseconds), row(.maxAttempts),
        row(.streamRetentionHours),
        row(.deadLetterRetentionHours),
        row(.adminToken), row(.adminTokenFile), row(.maxBodyBytes), row(.maxBatchBodyBytes), row(.ingestWaitReplicas),
        row(.ingestWaitTimeoutMilliseconds), row(.ingestRedisConnections), row(.ingestMaxInFlight),
        row(.ingestQueueTargetMilliseconds), row(.ingestMaxEventsLag), row(.ingestCallerRate), row(.ingestCallerBurst),
        row(.keyRotationGraceHours), row(.crowdTierThresholds), row(.crowdCacheMilliseconds), row(.registryCacheMilliseconds),
        row(.verifierThreads),
        row(.timerPollMilliseconds), row(.conversionSettleMilliseconds), row(.windowCloseGraceMilliseconds),
        row(.postbackURLAllowList), row(.publicSuffixList), row(.developmentMode), row(.signingKeyFile), row(.signingKeyID),
        row(.developmentSigningKeyFile),
        row(.developmentSigningKeyID), row(.testSigningKeyFile), row(.testSigningKeyID), row(.deliveryTimeoutMilliseconds),
        row(.deliveryConcurrencyPerHost),
        row(.signingKeyGraceHours),
    ]

    static func row<Value>(_ key: Typed<Value>) -> ConfigurationKey { key.key }

    /// The configuration reference's table, generated from the catalog (`ingest --configuration-table`).
    public static func markdownTable() -> String {
        var lines = ["| variable | type | default | allowed | read by | meaning |", "|---|---|---|---|---|---|"]
        for key in all {
            let services = key.services == allServices ? "all" : key.services.joined(separator: ", ")
            let cells = [
                "`\(key.name)`", key.type, key.defaultValue.map { "`\($0)`" } ?? "required", key.allowed ?? "any",
                services, key.summary,
            ]
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }
}
