// The admin API's bodies and path parameters: what ingest checks before it stores a registration.
// Parsing an ad network's public key needs AttributionCrypto, so ingest does that one before `validate`.

extension IngestRequests.AdNetwork {
    /// Up to a year, as `KEY_ROTATION_GRACE_HOURS` (the default) allows.
    public static let previousKeyGraceSecondsRange = 0...31_536_000

    public func validate(destinations: DestinationPolicy) throws(RequestProblem) {
        try RequestChecks.destination(postbackURL, field: "postback-url", policy: destinations)
        if let grace = previousKeyGraceSeconds, !Self.previousKeyGraceSecondsRange.contains(grace) {
            throw RequestProblem(.valueOutOfRange, "previous-key-grace-seconds must be within 0–31536000 (365 days)")
        }
        if let skanPublicKey, skanPublicKey.isEmpty || skanPublicKey.utf8.count > 4_096 {
            throw RequestProblem(.invalidPublicKey, "skan-public-key must be base64 SPKI or PEM")
        }
    }
}

extension IngestRequests.AdNetwork {
    /// The registration to store for `network`, whose public key ingest parsed to `jwk`: a new one, or
    /// the `existing` one rotated to this key, the previous key staying valid for the request's
    /// `previous-key-grace-seconds` (else `defaultGrace`, `KEY_ROTATION_GRACE_HOURS`).
    public func registration(
        _ network: AdNetworkIdentifier, jwk: String, existing: AdNetworkRegistration?, now: Milliseconds,
        defaultGrace: Milliseconds
    ) -> AdNetworkRegistration {
        guard let existing else {
            return AdNetworkRegistration(
                adNetworkIdentifier: network, publicKey: jwk, postbackURL: postbackURL, skanPublicKey: skanPublicKey)
        }
        let grace = previousKeyGraceSeconds.map { TimePolicy.realTime.milliseconds(.seconds($0)) } ?? defaultGrace
        return existing.rotated(to: jwk, postbackURL: postbackURL, skanPublicKey: skanPublicKey, at: now, grace: grace)
    }
}

extension IngestRequests.PublisherApp {
    public func validate() throws(RequestProblem) {
        _ = try adNetworks()
    }

    /// The registration to store: every listed id must be an ad network id.
    public func configuration(itemIdentifier: ItemIdentifier) throws(RequestProblem) -> PublisherAppConfiguration {
        PublisherAppConfiguration(itemIdentifier: itemIdentifier, adNetworkIdentifiers: try adNetworks())
    }

    private func adNetworks() throws(RequestProblem) -> [AdNetworkIdentifier] {
        var networks: [AdNetworkIdentifier] = []
        for id in adNetworkIdentifiers {
            guard let network = AdNetworkIdentifier(id) else {
                throw RequestProblem(
                    .invalidAdNetworkIdentifier, "AdNetworkIdentifiers holds \(id), which is not a lowercase ad network id")
            }
            // Listed twice is listed once.
            if !networks.contains(network) { networks.append(network) }
        }
        return networks
    }
}

extension IngestRequests.AdvertisedApp {
    /// The ranges of Apple's keys, then the copy endpoint: a domain copies may go to.
    public func validate(destinations: DestinationPolicy) throws(RequestProblem) {
        // The checks read the configuration's values only; the item id plays no part in them.
        try Self.validate(configuration(itemIdentifier: 0), destinations: destinations)
    }

    /// The registration to store, once `validate` finds nothing wrong.
    public func configuration(itemIdentifier: ItemIdentifier, destinations: DestinationPolicy) throws(RequestProblem)
        -> AdvertisedAppConfiguration
    {
        let registration = configuration(itemIdentifier: itemIdentifier)
        try Self.validate(registration, destinations: destinations)
        return registration
    }

    private static func validate(_ configuration: AdvertisedAppConfiguration, destinations: DestinationPolicy)
        throws(RequestProblem)
    {
        if let problem = configuration.validationProblems().first {
            throw RequestProblem(.valueOutOfRange, problem.description)
        }
        if let endpoint = configuration.attributionCopyEndpoint {
            guard let report = CopyEndpoint.reportURL(for: endpoint, suffixes: destinations.publicSuffixes) else {
                throw RequestProblem(
                    .invalidCopyEndpoint,
                    "AttributionCopyEndpoint must be an https URL with a registrable domain (not a public suffix such as github.io alone), e.g. https://example.com"
                )
            }
            try RequestChecks.destination(report, field: "AttributionCopyEndpoint", policy: destinations)
        }
    }
}

extension ConversionValueSchema {
    /// An uploaded schema (`PUT …/conversion-value-schema`): see `validationProblems`.
    public func validate() throws(RequestProblem) {
        if let problem = validationProblems().first { throw RequestProblem(.invalidSchema, problem) }
    }
}

/// The admin API's path parameters and query values.
public enum RequestParameters {
    /// `{id}` of `/v1/admin/ad-networks/{id}`.
    public static func adNetwork(_ text: String) throws(RequestProblem) -> AdNetworkIdentifier {
        guard let network = AdNetworkIdentifier(text) else {
            throw RequestProblem(
                .invalidAdNetworkIdentifier, "ad network ids are lowercase letters, digits, '.', '-' and '_'")
        }
        return network
    }

    /// `{item}`: an App Store item id.
    public static func itemIdentifier(_ text: String) throws(RequestProblem) -> ItemIdentifier {
        guard let item = ItemIdentifier(text), item > 0 else {
            throw RequestProblem(.invalidItemIdentifier, "item ids are positive integers")
        }
        return item
    }

    /// `{version}` of a conversion-value schema.
    public static func schemaVersion(_ text: String) throws(RequestProblem) -> Int {
        guard let version = Int(text), version > 0 else {
            throw RequestProblem(.invalidVersion, "schema versions are positive integers")
        }
        return version
    }

    /// `{device}` of `DELETE /v1/admin/devices/{device}`, as the router hands it over (still
    /// percent-encoded): decoded once, then the same bounds as in event bodies. Undecoded, an identifier
    /// with a space or non-ASCII would match no key, and the erasure would answer 200 having erased nothing.
    public static func deviceIdentifier(pathSegment: String) throws(RequestProblem) -> String {
        guard let decoded = pathSegment.removingPercentEncoding else {
            throw RequestProblem(
                .invalidDeviceIdentifier, "the path's device identifier is not valid percent-encoding (UTF-8, %XX)")
        }
        return try deviceIdentifier(decoded)
    }

    /// A device identifier to erase, from a body: the same bounds as in event bodies.
    public static func deviceIdentifier(_ text: String) throws(RequestProblem) -> String {
        try RequestChecks.deviceIdentifier(text)
        return text
    }

    public static let deadLetterCountRange = 1...1_000

    /// `?count=` of the dead-letter list: 100 when absent; an integer within 1–1000 otherwise.
    public static func deadLetterCount(_ text: String?) throws(RequestProblem) -> Int {
        guard let text else { return 100 }
        guard let count = Int(text), deadLetterCountRange.contains(count) else {
            throw RequestProblem(.valueOutOfRange, "count must be an integer within 1–1000")
        }
        return count
    }
}
