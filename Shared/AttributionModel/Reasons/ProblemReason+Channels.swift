extension ProblemReason {
    /// Where a client meets a reason.
    public enum Channel: String, Sendable, Hashable, CaseIterable {
        /// The `reason` of problem JSON: an HTTP answer (ingest's API, or any service's `/ready`).
        case problemDetails
        /// The `reason` of a `Rejection`: on the `rejected` stream, in the admin API's refusal lists and
        /// in `verifier_rejections_total{reason}`.
        case rejection
    }

    /// The channels this reason appears in; the OpenAPI document lists each channel's reasons.
    public var channels: Set<Channel> {
        switch self {
        // Refused by ingest on sight, and by the verifier when a signed part says the same.
        case .invalidComponents, .unknownAdNetwork, .unknownAdvertisedApp, .invalidConversionTag: [.problemDetails, .rejection]
        case .invalidHeader, .invalidPayload, .invalidSignature, .unsupportedAlgorithm, .keyIdentifierMismatch,
            .publisherNotListingNetwork, .impressionExpired, .impressionFromFuture, .impressionReplayed, .clickTooLate,
            .viewTooShort, .overlappingView, .noEligibleImpression, .cooldown, .reengagementAppCap,
            .reengagementDeviceCap, .conversionNotFound, .pendingLimit:
            [.rejection]
        case .invalidJSON, .invalidBody, .invalidDeviceIdentifier, .invalidTime, .invalidInteraction,
            .invalidSKAdNetworkImpression, .invalidCountryCode, .invalidMarketplaceIdentifier, .valueOutOfRange, .invalidActivity,
            .invalidIdempotencyKey, .invalidReengagementURL,
            .invalidAdNetworkIdentifier, .invalidItemIdentifier, .invalidPublicKey, .invalidPostbackURL, .invalidCopyEndpoint,
            .invalidPropertyList, .invalidConfiguration, .unknownKey, .invalidSchema, .invalidVersion,
            .invalidDeadLetterIdentifier, .destinationInvalid, .destinationNotHTTPS, .destinationPrivateAddress,
            .destinationUnresolvable, .unauthorized, .missingAppKey, .invalidAppKey, .appKeyMismatch, .credentialMismatch,
            .noSchema, .unknownSchemaVersion, .unknownDeadLetter, .unknownAppKey, .unknownCredential, .unknownPublisherApp,
            .notReplayable, .idempotencyKeyReused, .notFound,
            .methodNotAllowed,
            .bodyTooLarge, .bodyTimeout, .httpError, .internalError, .redisUnreachable, .replicationTimeout,
            .consumerGroupMissing, .invalidBatch, .batchTooLarge, .overloaded, .pipelineLagging, .rateLimited,
            .conversionTagNotSupported:
            [.problemDetails]
        }
    }

    /// Every reason that appears in `channel`, in declaration order.
    public static func appearing(in channel: Channel) -> [ProblemReason] {
        allCases.filter { $0.channels.contains(channel) }
    }
}

extension ProblemReason {
    /// attribution-winner's refusal of a verified conversion, as the reason its `Rejection` carries.
    public init(_ refusal: ConversionEligibility.Refusal) {
        switch refusal {
        case .noEligibleImpression: self = .noEligibleImpression
        case .cooldown: self = .cooldown
        case .appReengagementCap: self = .reengagementAppCap
        case .deviceReengagementCap: self = .reengagementDeviceCap
        }
    }

    /// Why a postback URL or copy endpoint may not be used, as the reason ingest answers with (the
    /// same strings: the refusal's raw value is the reason).
    public init(_ refusal: DestinationPolicy.Refusal) {
        switch refusal {
        case .invalid: self = .destinationInvalid
        case .notHTTPS: self = .destinationNotHTTPS
        case .privateAddress: self = .destinationPrivateAddress
        case .unresolvable: self = .destinationUnresolvable
        }
    }
}
