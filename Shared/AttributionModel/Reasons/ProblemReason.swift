/// Every machine-readable reason a client can be given, in one type: the `reason` of ingest's problem
/// JSON and the reason of a `Rejection` (the verifier's and attribution-winner's refusals). The raw
/// strings are the wire format and never change; clients match on them. The OpenAPI document lists
/// them (`channels` says where each appears) and a test holds it to `allCases`.
///
/// The verifier's vocabulary mirrors Apple's error names where Apple has one.
public enum ProblemReason: String, Sendable, Codable, Hashable, CaseIterable {
    // The verifier's refusals of an event.
    case invalidHeader = "invalid-header"
    case invalidPayload = "invalid-payload"
    case invalidSignature = "invalid-signature"
    case invalidComponents = "invalid-components"
    case unsupportedAlgorithm = "unsupported-algorithm"
    case keyIdentifierMismatch = "key-identifier-mismatch"
    case unknownAdNetwork = "unknown-ad-network"
    case unknownAdvertisedApp = "unknown-advertised-app"
    case publisherNotListingNetwork = "publisher-not-listing-network"
    case impressionExpired = "impression-expired"
    case impressionFromFuture = "impression-from-future"
    case impressionReplayed = "impression-replayed"
    case clickTooLate = "click-too-late"
    case viewTooShort = "view-too-short"
    case overlappingView = "overlapping-view"
    // attribution-winner's refusals of a verified conversion (ConversionEligibility.Refusal).
    case noEligibleImpression = "no-eligible-impression"
    case cooldown
    case reengagementAppCap = "re-engagement-app-cap"
    case reengagementDeviceCap = "re-engagement-device-cap"
    // attribution-winner's refusals of a verified update or activity report (DeviceStateLimits).
    case conversionNotFound = "conversion-not-found"
    case pendingLimit = "pending-limit"
    /// Apple's `AdAttributionKitError.invalidConversionTag`: a tag that is no conversion tag (400), or
    /// one that named no re-engagement conversion of the app on the device while the report waited.
    case invalidConversionTag = "invalid-conversion-tag"
    /// Apple's `AdAttributionKitError.conversionTagNotSupported`: a tag where none can apply (an update
    /// whose `conversionTypes` leave re-engagements out: only re-engagement conversions have tags).
    case conversionTagNotSupported = "conversion-tag-not-supported"

    // Request bodies and parameters ingest refuses with 400 (RequestProblem).
    case invalidJSON = "invalid-json"
    case invalidBody = "invalid-body"
    case invalidDeviceIdentifier = "invalid-device-identifier"
    case invalidTime = "invalid-time"
    case invalidInteraction = "invalid-interaction"
    case invalidSKAdNetworkImpression = "invalid-skadnetwork-impression"
    case invalidCountryCode = "invalid-country-code"
    case invalidMarketplaceIdentifier = "invalid-marketplace-identifier"
    case invalidReengagementURL = "invalid-reengagement-url"
    case valueOutOfRange = "value-out-of-range"
    case invalidActivity = "invalid-activity"
    case invalidIdempotencyKey = "invalid-idempotency-key"
    case invalidAdNetworkIdentifier = "invalid-ad-network-identifier"
    case invalidItemIdentifier = "invalid-item-identifier"
    case invalidPublicKey = "invalid-public-key"
    case invalidPostbackURL = "invalid-postback-url"
    case invalidCopyEndpoint = "invalid-copy-endpoint"
    case invalidPropertyList = "invalid-property-list"
    case invalidConfiguration = "invalid-configuration"
    case unknownKey = "unknown-key"
    case invalidSchema = "invalid-schema"
    case invalidVersion = "invalid-version"
    case invalidDeadLetterIdentifier = "invalid-dead-letter-id"
    // Where postbacks and copies may not go (DestinationPolicy.Refusal).
    case destinationInvalid = "destination-invalid"
    case destinationNotHTTPS = "destination-not-https"
    case destinationPrivateAddress = "destination-private-address"
    case destinationUnresolvable = "destination-unresolvable"

    // Credentials.
    case unauthorized
    case missingAppKey = "missing-app-key"
    case invalidAppKey = "invalid-app-key"
    case appKeyMismatch = "app-key-mismatch"
    /// A network credential used for another ad network's routes (403).
    case credentialMismatch = "credential-mismatch"

    // What the request names does not exist, or cannot be done now.
    case noSchema = "no-schema"
    case unknownSchemaVersion = "unknown-schema-version"
    case unknownDeadLetter = "unknown-dead-letter"
    case unknownAppKey = "unknown-app-key"
    case unknownCredential = "unknown-credential"
    case unknownPublisherApp = "unknown-publisher-app"
    case notReplayable = "not-replayable"
    case idempotencyKeyReused = "idempotency-key-reused"

    // Batch routes: the body as a whole (each item is answered with its own reason).
    case invalidBatch = "invalid-batch"
    case batchTooLarge = "batch-too-large"

    // HTTP itself: routing, body transfer, and the server's own failures.
    case notFound = "not-found"
    case methodNotAllowed = "method-not-allowed"
    case bodyTooLarge = "body-too-large"
    case bodyTimeout = "body-timeout"
    case httpError = "http-error"
    case internalError = "internal-error"
    // Every service's `/ready`; and ingest when Redis cannot take an event (503, retry later).
    case redisUnreachable = "redis-unreachable"
    /// ingest wrote the event but no replica confirmed it within `INGEST_WAIT_TIMEOUT_MS` (503).
    case replicationTimeout = "replication-timeout"
    case consumerGroupMissing = "consumer-group-missing"
    // Overload: ingest refuses at once, before the work is done, rather than queueing (503/429 with
    // `Retry-After`; nothing was written, retry later).
    /// ingest's publishes are queueing past `INGEST_QUEUE_TARGET_MS`, or `INGEST_MAX_IN_FLIGHT` is reached (503).
    case overloaded
    /// The verifier is more than `INGEST_MAX_EVENTS_LAG` events behind on `events` (503).
    case pipelineLagging = "pipeline-lagging"
    /// This caller (ad network or app) is past its `INGEST_CALLER_RATE` share (429).
    case rateLimited = "rate-limited"
}
