import AttributionModel
import Testing

/// Reason codes are the wire format clients match on: none may change spelling or disappear.
@Suite("Problem reasons")
struct ProblemReasonTests {
    /// Every code as clients saw it when the reasons became one enum. Adding a code means adding it
    /// here; changing or removing one breaks clients.
    static let published: Set<String> = [
        "invalid-header", "invalid-payload", "invalid-signature", "invalid-components", "unsupported-algorithm",
        "key-identifier-mismatch", "unknown-ad-network", "unknown-advertised-app", "publisher-not-listing-network",
        "impression-expired", "impression-from-future", "impression-replayed", "click-too-late", "view-too-short",
        "overlapping-view", "no-eligible-impression", "cooldown", "re-engagement-app-cap",
        "re-engagement-device-cap", "invalid-json", "invalid-body", "invalid-device-identifier", "invalid-time",
        "invalid-interaction", "invalid-skadnetwork-impression", "invalid-country-code", "value-out-of-range",
        "invalid-activity", "invalid-idempotency-key", "invalid-ad-network-identifier", "invalid-item-identifier",
        "invalid-public-key", "invalid-postback-url", "invalid-copy-endpoint", "invalid-property-list",
        "invalid-configuration", "unknown-key", "invalid-schema", "invalid-version", "invalid-dead-letter-id",
        "destination-invalid", "destination-not-https", "destination-private-address", "destination-unresolvable",
        "unauthorized", "missing-app-key", "invalid-app-key", "app-key-mismatch", "no-schema", "unknown-schema-version",
        "unknown-dead-letter", "not-replayable", "idempotency-key-reused", "not-found", "method-not-allowed",
        "body-too-large", "body-timeout", "http-error", "internal-error", "redis-unreachable", "consumer-group-missing",
        "replication-timeout", "invalid-batch", "batch-too-large", "overloaded", "pipeline-lagging", "rate-limited",
        "unknown-app-key", "credential-mismatch", "unknown-credential", "unknown-publisher-app",
        "invalid-marketplace-identifier", "conversion-not-found", "pending-limit", "invalid-conversion-tag",
        "conversion-tag-not-supported", "invalid-reengagement-url",
    ]

    @Test func reasonStringsAreTheOnesClientsKnow() {
        let current = Set(ProblemReason.allCases.map(\.rawValue))
        #expect(Self.published.subtracting(current).isEmpty, "gone or renamed: \(Self.published.subtracting(current).sorted())")
        #expect(
            current.subtracting(Self.published).isEmpty, "new, not pinned here: \(current.subtracting(Self.published).sorted())")
        #expect(current.count == ProblemReason.allCases.count)
    }

    @Test func everyReasonAppearsSomewhere() {
        for reason in ProblemReason.allCases { #expect(!reason.channels.isEmpty, "\(reason.rawValue) has a channel") }
    }

    /// attribution-winner's refusals and ingest's destination refusals keep their own spellings.
    @Test func refusalsMapToTheReasonOfTheSameName() {
        for refusal in ConversionEligibility.Refusal.allCases {
            let reason = RejectionReason(refusal)
            #expect(reason.channels == [.rejection])
            #expect(reason.rawValue == refusal.rawValue)
        }
        for refusal: DestinationPolicy.Refusal in [.invalid, .notHTTPS, .privateAddress, .unresolvable] {
            #expect(ProblemReason(refusal).rawValue == refusal.rawValue)
        }
    }
}
