/// An impression whose signature is still to check: the JWS or SKAdNetwork form parsed (in
/// AttributionCrypto), its payload in the pool's common shape.
public protocol VerifiableImpression: Sendable {
    var payload: ImpressionPayload { get }
    var kind: ImpressionKind { get }
    /// Nil when one of `keys` verifies the signature; else why not.
    func signatureProblem(keys: [String]) -> (reason: RejectionReason, detail: String)?
}

/// The verifier's decision for one event, as a pure function: an impression must pass every check in
/// the order that gives the most useful reason first (form, algorithm, key id: when parsed; then
/// registration, signature, payload rules, advertised app, publisher listing, replay, open views);
/// conversions, updates and activity need their advertised app registered. The verifier service reads
/// the registry, replay markers and recent views for the batch, calls `step`, and writes what it returns.
public struct VerifierStep: Sendable {
    public var policy: TimePolicy

    public init(policy: TimePolicy) { self.policy = policy }

    /// Why an event is refused: a stable reason, a detail for people, and the network (or impression)
    /// it concerns when known.
    public struct Refusal: Error, Sendable, Hashable {
        public var reason: RejectionReason
        public var detail: String
        public var adNetworkIdentifier: String?
        public var impressionIdentifier: String?
        /// Whether the impression's signature verified: only then did the network it names send it.
        /// Anyone can name a network on an impression that fails before (parse, algorithm, signature).
        public var signed = false

        public init(
            reason: RejectionReason, detail: String, adNetworkIdentifier: String? = nil, impressionIdentifier: String? = nil
        ) {
            self.reason = reason
            self.detail = detail
            self.adNetworkIdentifier = adNetworkIdentifier
            self.impressionIdentifier = impressionIdentifier
        }
    }

    /// The registry entries the batch read.
    public struct Registry: Sendable {
        public var adNetworks: [String: AdNetworkRegistration]
        public var publisherApps: [ItemIdentifier: PublisherAppConfiguration]
        public var advertisedApps: [ItemIdentifier: AdvertisedAppConfiguration]

        public init(
            adNetworks: [String: AdNetworkRegistration] = [:], publisherApps: [ItemIdentifier: PublisherAppConfiguration] = [:],
            advertisedApps: [ItemIdentifier: AdvertisedAppConfiguration] = [:]
        ) {
            self.adNetworks = adNetworks
            self.publisherApps = publisherApps
            self.advertisedApps = advertisedApps
        }
    }

    /// One network's views of one advertised app on one device (the one-open-view rule's scope).
    public struct ViewScope: Sendable, Hashable {
        public var device: String
        public var app: ItemIdentifier
        public var network: AdNetworkIdentifier

        public init(device: String, app: ItemIdentifier, network: AdNetworkIdentifier) {
            self.device = device
            self.app = app
            self.network = network
        }
    }

    /// What the verifier knows beyond the registry: impressions already used (replay markers), and views
    /// already recorded that end after each new view of the batch begins. The batch's own admissions
    /// are added as it goes.
    public struct Facts: Sendable {
        public var seen: Set<String>
        public var views: [ViewScope: [ViewInterval]]

        public init(seen: Set<String> = [], views: [ViewScope: [ViewInterval]] = [:]) {
            self.seen = seen
            self.views = views
        }
    }

    /// Where a refusal is listed for the admin API: its network's log, or its advertised app's. A
    /// refusal naming a registered network without its signature (anyone can send one) goes to that
    /// network's list of unsigned refusals, and is counted: in its own list, a flood of them would push
    /// the network's genuine refusals out.
    public enum RefusalLog: Sendable, Hashable {
        case network(String)
        case app(ItemIdentifier)
        case unsigned(network: String)
    }

    public enum Effects: Sendable {
        /// Passed on to `verified`; an impression's id is marked as used and a view recorded, each kept
        /// `keepFor` (as long as the impression could be fresh).
        case verified(Envelope, markSeen: String?, view: (ViewScope, ViewInterval)?, keepFor: Milliseconds)
        /// Recorded on `rejected` and in the refusal log, and counted.
        case refused(Rejection, log: RefusalLog?, counts: [StepCount])
    }

    /// The view an impression report records, if it is a begin/end view: a one-call view (no begin) has
    /// no time on screen, so the one-open-view rule neither checks nor records it.
    public static func view(of report: ImpressionReport, payload: ImpressionPayload) -> (ViewScope, ViewInterval)? {
        guard report.interaction.type == .view, let begin = report.interaction.begin else { return nil }
        return (
            ViewScope(
                device: report.deviceIdentifier, app: payload.advertisedItemIdentifier, network: payload.adNetworkIdentifier),
            ViewInterval(begin: begin, end: report.interaction.time)
        )
    }

    /// One replay-marker claim: an impression id claimed by an event (`SET NX GET` holding the event id),
    /// and who held the marker before (`holder`, nil when this claim set it).
    public struct MarkerClaim: Sendable, Hashable {
        public var impression: String
        public var event: String
        /// The event already holding the marker (nil: this claim set it), and since when.
        public var holder: String?
        public var heldSince: Milliseconds?

        public init(impression: String, event: String, holder: String?, heldSince: Milliseconds? = nil) {
            self.impression = impression
            self.event = event
            self.holder = holder
            self.heldSince = heldSince
        }

        /// A claim from the marker's previous value (`markerValue`), nil when this claim set it.
        public init(impression: String, event: String, marker: String?) {
            let parts = marker?.split(separator: " ", maxSplits: 1).map(String.init) ?? []
            self.init(
                impression: impression, event: event, holder: parts.first,
                heldSince: parts.dropFirst().first.flatMap { Milliseconds($0) })
        }
    }

    /// What a replay marker holds: the claiming event's id and when it claimed (wall-clock ms).
    public static func markerValue(event: String, claimedAt: Milliseconds) -> String {
        "\(event) \(claimedAt)"
    }

    /// The impressions already used, from one batch's marker claims at `now`: a marker held by another
    /// event is a replay, unless that event is in the same batch (the step then refuses the later one
    /// itself once the earlier passes, and passes it if the earlier is refused for another reason). A
    /// marker held by the claiming event is its own earlier claim (a batch redone, a dead letter
    /// replayed, a keyed retry whose first copy a failover discarded: a keyed event's id follows from its
    /// request) while `Retention.idempotency` has not passed since; later, the same request sent again is
    /// a replay, as it would be once its `Idempotency-Key` record expired.
    public static func usedImpressions(_ claims: [MarkerClaim], now: Milliseconds) -> Set<String> {
        let batch = Set(claims.map(\.event))
        return Set(
            claims.filter { claim in
                guard let holder = claim.holder else { return false }
                if holder == claim.event { return claim.heldSince.map { now - $0 > Retention.idempotency } ?? false }
                return !batch.contains(holder)
            }.map(\.impression))
    }

    /// An impression's parse after the registration, signature and payload checks: a success is an
    /// impression that may claim its replay marker (only a genuine signer can consume an impression
    /// id); pass the result to `step` with `verified: true` so the signature is not checked twice.
    public func verified<Impression: VerifiableImpression>(
        _ parsed: Result<Impression, Refusal>, report: ImpressionReport, registry: Registry
    ) -> Result<Impression, Refusal> {
        guard case .success(let impression) = parsed else { return parsed }
        do throws(Refusal) {
            try verify(impression, report: report, registry: registry)
            return .success(impression)
        } catch { return .failure(error) }
    }

    /// One event. `parsed` is the impression's parse (nil for other events); `verified` says it went
    /// through `verified(_:report:registry:)` already.
    public func step<Impression: VerifiableImpression>(
        _ envelope: Envelope, parsed: Result<Impression, Refusal>?, registry: Registry, facts: inout Facts,
        verified: Bool = false
    ) -> StepOutcome<Effects> {
        func refuse(_ refusal: Refusal, app: ItemIdentifier? = nil) -> StepOutcome<Effects> {
            let rejection = Rejection(
                reason: refusal.reason, detail: refusal.detail, eventIdentifier: envelope.id,
                adNetworkIdentifier: refusal.adNetworkIdentifier, impressionIdentifier: refusal.impressionIdentifier)
            // Listed only for a registered network or app: an anonymous request naming an unregistered id
            // must not make Redis keep a list for it, and one naming a registered network without its
            // signature is only counted.
            let network = refusal.adNetworkIdentifier.flatMap {
                registry.adNetworks[$0] == nil
                    ? nil : refusal.signed ? RefusalLog.network($0) : RefusalLog.unsigned(network: $0)
            }
            let log = network ?? app.flatMap { registry.advertisedApps[$0] == nil ? nil : RefusalLog.app($0) }
            return .done(.refused(rejection, log: log, counts: [.rejection(refusal.reason)]))
        }
        func pass(_ body: MessageBody, markSeen: String? = nil, view: (ViewScope, ViewInterval)? = nil) -> StepOutcome<Effects> {
            .done(
                .verified(
                    Envelope(id: envelope.id, time: envelope.time, body: body), markSeen: markSeen, view: view,
                    keepFor: Retention.impressionFreshness(policy)))
        }
        func registered(_ item: ItemIdentifier) -> Refusal? {
            registry.advertisedApps[item] == nil
                ? Refusal(reason: .unknownAdvertisedApp, detail: "advertised app \(item) is not registered") : nil
        }
        switch envelope.body {
        case .impressionReported(let report):
            let impression: Impression
            switch parsed {
            case .success(let parsed)?: impression = parsed
            case .failure(let refusal)?: return refuse(refusal)
            case nil: return .retry("impression was not parsed")
            }
            let payload = impression.payload
            if !verified {
                do throws(Refusal) {
                    try verify(impression, report: report, registry: registry)
                } catch { return refuse(error) }
            }
            func refusal(_ reason: RejectionReason, _ detail: String) -> Refusal {
                var refusal = Refusal(
                    reason: reason, detail: detail, adNetworkIdentifier: payload.adNetworkIdentifier.rawValue,
                    impressionIdentifier: payload.impressionIdentifier)
                refusal.signed = true  // verified above
                return refusal
            }
            guard !facts.seen.contains(payload.impressionIdentifier) else {
                return refuse(refusal(.impressionReplayed, "this impression-identifier was already used"))
            }
            let view = Self.view(of: report, payload: payload)
            if let (scope, interval) = view {
                if facts.views[scope, default: []].contains(where: interval.overlaps) {
                    return refuse(
                        refusal(.overlappingView, "this network already had a view of this app open on this device then"))
                }
                facts.views[scope, default: []].append(interval)
            }
            facts.seen.insert(payload.impressionIdentifier)
            let verified = VerifiedImpression(
                deviceIdentifier: report.deviceIdentifier, payload: payload, interaction: report.interaction,
                kind: impression.kind)
            return pass(.impressionVerified(verified), markSeen: payload.impressionIdentifier, view: view)
        case .conversionReported(let report):
            guard let app = registry.advertisedApps[report.advertisedItemIdentifier] else {
                return refuse(registered(report.advertisedItemIdentifier)!, app: report.advertisedItemIdentifier)
            }
            return pass(.conversionVerified(VerifiedConversion(report: report, app: app)))
        case .updateReported(let report):
            if let refusal = registered(report.advertisedItemIdentifier) {
                return refuse(refusal, app: report.advertisedItemIdentifier)
            }
            return pass(.updateVerified(report))
        case .activityReported(let report):
            if let refusal = registered(report.advertisedItemIdentifier) {
                return refuse(refusal, app: report.advertisedItemIdentifier)
            }
            return pass(.activityVerified(report))
        case .testPostbacksRequested(let request):
            // Ingest checked the network and its credential; it may have been deleted since.
            let network = request.adNetworkIdentifier.rawValue
            guard registry.adNetworks[network] != nil else {
                return refuse(Refusal(reason: .unknownAdNetwork, detail: "ad network \(network) is not registered"))
            }
            return pass(envelope.body)
        default:
            return .retry("verifier does not take \(envelope.type.rawValue) messages")
        }
    }

    /// Registration, signature (after a rotation the previous key stays valid for its grace period),
    /// payload rules, advertised app, publisher listing.
    func verify(_ impression: some VerifiableImpression, report: ImpressionReport, registry: Registry) throws(Refusal) {
        let payload = impression.payload
        var signed = false
        func refuse(_ reason: RejectionReason, _ detail: String) -> Refusal {
            var refusal = Refusal(
                reason: reason, detail: detail, adNetworkIdentifier: payload.adNetworkIdentifier.rawValue,
                impressionIdentifier: payload.impressionIdentifier)
            refusal.signed = signed
            return refusal
        }
        guard let network = registry.adNetworks[payload.adNetworkIdentifier.rawValue] else {
            throw refuse(.unknownAdNetwork, "ad network \(payload.adNetworkIdentifier) is not registered")
        }
        let keys: [String]
        switch impression.kind {
        case .adAttributionKit:
            keys = network.acceptedKeys(at: report.receivedAt)
        case .skAdNetwork:
            guard let key = network.skanPublicKey else {
                throw refuse(.unknownAdNetwork, "ad network \(payload.adNetworkIdentifier) registered no SKAdNetwork key")
            }
            keys = [key]
        }
        if let problem = impression.signatureProblem(keys: keys) { throw refuse(problem.reason, problem.detail) }
        signed = true
        if let (reason, detail) = ImpressionRules.check(
            payload, interaction: report.interaction, receivedAt: report.receivedAt, policy: policy)
        {
            throw refuse(reason, detail)
        }
        guard registry.advertisedApps[payload.advertisedItemIdentifier] != nil else {
            throw refuse(.unknownAdvertisedApp, "advertised app \(payload.advertisedItemIdentifier) is not registered")
        }
        // Development impressions (publisher 0) come from no registered publisher app.
        if !payload.isDevelopment {
            guard let publisher = registry.publisherApps[payload.publisherItemIdentifier],
                publisher.adNetworkIdentifiers.contains(payload.adNetworkIdentifier)
            else {
                throw refuse(
                    .publisherNotListingNetwork,
                    "publisher app \(payload.publisherItemIdentifier) does not list \(payload.adNetworkIdentifier) in AdNetworkIdentifiers"
                )
            }
        }
    }
}
