import AttributionModel
import Testing

/// The verifier's step, with a stand-in signature (the real formats are tested in AttributionCrypto's
/// suites): the order of the checks, replays and overlapping views within a batch, refusal logs.
@Suite struct VerifierStepTests {
    typealias F = Fixture
    static let now: Milliseconds = 1_700_000_000_000
    let step = VerifierStep(policy: .realTime)

    /// An impression whose signature verifies with `validKey` only.
    struct StandIn: VerifiableImpression {
        var payload: ImpressionPayload
        var kind: ImpressionKind = .adAttributionKit
        var validKey = "key-1"
        func signatureProblem(keys: [String]) -> (reason: RejectionReason, detail: String)? {
            keys.contains(validKey) ? nil : (.invalidSignature, "no key verifies")
        }
    }

    static let network = "one.adattributionkit"
    static let registry = VerifierStep.Registry(
        adNetworks: [
            network: AdNetworkRegistration(
                adNetworkIdentifier: F.network(network), publicKey: "key-1", postbackURL: "https://one.example/postbacks")
        ],
        publisherApps: [
            5_838_492: PublisherAppConfiguration(itemIdentifier: 5_838_492, adNetworkIdentifiers: [F.network(network)])
        ],
        advertisedApps: [F.app: AdvertisedAppConfiguration(itemIdentifier: F.app)])

    /// A UUID-shaped impression id per name (the payload rules require one).
    static func uuid(_ name: String) -> String {
        let hex = name.utf8.prefix(6).map { String($0, radix: 16) }.joined()
        return "00000000-0000-0000-0000-" + String(repeating: "0", count: 12 - hex.count) + hex
    }

    static func impression(
        _ id: String, view: (begin: Milliseconds, end: Milliseconds)? = nil, oneCallView: Milliseconds? = nil,
        publisher: ItemIdentifier = 5_838_492
    )
        -> (Envelope, StandIn)
    {
        let payload = ImpressionPayload(
            impressionIdentifier: uuid(id), adNetworkIdentifier: F.network(network), advertisedItemIdentifier: F.app,
            publisherItemIdentifier: publisher, sourceIdentifier: 5239, timestamp: now - 60_000)
        let interaction: Interaction =
            view.map { .view(begin: $0.begin, end: $0.end) } ?? oneCallView.map { .oneCallView(at: $0) }
            ?? .click(at: now - 1_000, loadedAt: now - 2_000)
        let report = ImpressionReport(deviceIdentifier: "device-1", impression: "-", interaction: interaction, receivedAt: now)
        return (Envelope(id: "event-\(id)", time: now, body: .impressionReported(report)), StandIn(payload: payload))
    }

    func run(
        _ envelope: Envelope, _ impression: StandIn?, registry: VerifierStep.Registry = registry, facts: inout VerifierStep.Facts
    )
        -> VerifierStep.Effects?
    {
        let parsed = impression.map { Result<StandIn, VerifierStep.Refusal>.success($0) }
        guard case .done(let effects) = step.step(envelope, parsed: parsed, registry: registry, facts: &facts) else { return nil }
        return effects
    }

    func reason(_ effects: VerifierStep.Effects?) -> String {
        switch effects {
        case .verified?: "verified"
        case .refused(let rejection, _, _)?: rejection.reason.rawValue
        case nil: "retried"
        }
    }

    @Test(arguments: [
        ("registered and signed", "verified"),
        ("unknown network", "unknown-ad-network"),
        ("wrong key", "invalid-signature"),
        ("unknown advertised app", "unknown-advertised-app"),
        ("publisher not listing", "publisher-not-listing-network"),
    ])
    func checksInOrder(name: String, expected: String) {
        var registry = Self.registry
        var (envelope, impression) = Self.impression(String(name.prefix(6)))
        switch name {
        case "unknown network": registry.adNetworks = [:]
        case "wrong key": impression.validKey = "other"
        case "unknown advertised app": registry.advertisedApps = [:]
        case "publisher not listing": registry.publisherApps = [:]
        default: break
        }
        var facts = VerifierStep.Facts()
        #expect(reason(run(envelope, impression, registry: registry, facts: &facts)) == expected)
    }

    /// The same impression twice in one batch: the second is a replay; a marker read from Redis too.
    @Test func replaysWithinTheBatchAndFromRedis() {
        var facts = VerifierStep.Facts(seen: [Self.uuid("old")])
        let (first, impression) = Self.impression("fresh")
        guard case .verified(_, let markSeen, _, let keepFor)? = run(first, impression, facts: &facts) else {
            Issue.record("the first is verified")
            return
        }
        #expect(markSeen == Self.uuid("fresh") && keepFor == Retention.impressionFreshness(.realTime))
        #expect(reason(run(first, impression, facts: &facts)) == "impression-replayed")
        let (old, oldImpression) = Self.impression("old")
        #expect(reason(run(old, oldImpression, facts: &facts)) == "impression-replayed")
    }

    /// One open view per network, app and device: an overlapping one is refused, a touching one is not.
    @Test func overlappingViews() {
        var facts = VerifierStep.Facts()
        let begin = Self.now - 10_000
        let (a, ia) = Self.impression("a", view: (begin, begin + 3_000))
        let (b, ib) = Self.impression("b", view: (begin + 2_000, begin + 5_000))
        let (c, ic) = Self.impression("c", view: (begin + 3_000, begin + 6_000))
        #expect(reason(run(a, ia, facts: &facts)) == "verified")
        #expect(reason(run(b, ib, facts: &facts)) == "overlapping-view")
        #expect(reason(run(c, ic, facts: &facts)) == "verified")
        #expect(facts.views.values.first?.count == 2)
    }

    /// A one-call view (Apple's handleView(): no begin) has no time on screen: inside an open begin/end
    /// view of its network it is verified, and it records nothing a later begin/end view could overlap.
    @Test func oneCallViewsNeitherMeetNorHoldTheOpenViewRule() {
        var facts = VerifierStep.Facts()
        let begin = Self.now - 10_000
        let (a, ia) = Self.impression("a", view: (begin, begin + 3_000))
        let (b, ib) = Self.impression("b", oneCallView: begin + 1_000)
        let (c, ic) = Self.impression("c", oneCallView: begin + 5_000)
        let (d, id) = Self.impression("d", view: (begin + 4_000, begin + 7_000))
        #expect(reason(run(a, ia, facts: &facts)) == "verified")
        #expect(reason(run(b, ib, facts: &facts)) == "verified")
        #expect(reason(run(c, ic, facts: &facts)) == "verified")
        #expect(reason(run(d, id, facts: &facts)) == "verified", "the one-call view at begin + 5 s is no open view")
        #expect(facts.views.values.first?.count == 2)
    }

    /// A refusal is listed for its network when that network is registered, else for its advertised app
    /// when that app is registered, else nowhere (an unregistered or forged id must not make Redis
    /// keep a list for it: anyone could make it grow); it is counted either way.
    @Test func refusalLogs() {
        var facts = VerifierStep.Facts()
        var unregistered = Self.registry
        unregistered.adNetworks = [:]
        let (envelope, impression) = Self.impression("n")
        guard case .refused(_, let log, let counts)? = run(envelope, impression, registry: unregistered, facts: &facts) else {
            Issue.record("refused")
            return
        }
        #expect(log == nil && counts == [.rejection(.unknownAdNetwork)])

        var noApps = Self.registry
        noApps.advertisedApps = [:]
        let (other, otherImpression) = Self.impression("m")
        guard case .refused(_, let networkLog, _)? = run(other, otherImpression, registry: noApps, facts: &facts) else {
            Issue.record("refused")
            return
        }
        #expect(networkLog == .network(Self.network), "a registered network's refusal is listed for it")

        // Anyone can name a registered network on an impression it did not sign: listed apart.
        let (forged, forgedImpression) = Self.impression("f")
        var unsigned = forgedImpression
        unsigned.validKey = "an attacker's key"
        guard case .refused(let rejection, let forgedLog, _)? = run(forged, unsigned, facts: &facts) else {
            Issue.record("refused")
            return
        }
        #expect(rejection.reason == .invalidSignature)
        #expect(forgedLog == .unsigned(network: Self.network), "an unsigned refusal never enters the network's own list")
        var parseFailure = VerifierStep.Refusal(reason: .unsupportedAlgorithm, detail: "HS256", adNetworkIdentifier: Self.network)
        parseFailure.signed = false
        guard
            case .done(.refused(_, let headerLog, _)) = step.step(
                Self.impression("h").0, parsed: Result<StandIn, VerifierStep.Refusal>.failure(parseFailure),
                registry: Self.registry, facts: &facts)
        else {
            Issue.record("refused")
            return
        }
        #expect(headerLog == .unsigned(network: Self.network), "refused before its signature: unsigned")

        let report = ConversionReport(
            deviceIdentifier: "d", advertisedItemIdentifier: 42, conversionType: .download, time: Self.now, receivedAt: Self.now)
        let conversion = Envelope(id: "c", time: Self.now, body: .conversionReported(report))
        guard case .refused(let rejection, let appLog, _)? = run(conversion, StandIn?.none, facts: &facts) else {
            Issue.record("refused")
            return
        }
        #expect(rejection.reason == .unknownAdvertisedApp && appLog == nil, "an unregistered app gets no list")
    }

    /// Which claims of one batch mean the impression was already used.
    @Test(
        arguments: [
            // (claims as impression/event/marker, used impressions); now is 100,000,000
            ([("i1", "e1", nil)], Set<String>()),  // claimed now
            ([("i1", "e1", "e1 99000000")], []),  // this event's own claim (a redone batch, a lost first copy)
            ([("i1", "e1", "e1 10000000")], ["i1"]),  // its own, but over 24 h ago: the request sent again
            ([("i1", "e2", "e0 99000000")], ["i1"]),  // held by an event outside the batch: a replay
            ([("i1", "e1", nil), ("i1", "e2", "e1 100000000")], []),  // twice in the batch: the step decides
            ([("i1", "e1", nil), ("i2", "e2", "e9 1"), ("i3", "e3", "e3 99999999")], ["i2"]),
        ] as [([(String, String, String?)], Set<String>)])
    func usedImpressions(claims: [(String, String, String?)], used: Set<String>) {
        let claimed = claims.map { VerifierStep.MarkerClaim(impression: $0.0, event: $0.1, marker: $0.2) }
        #expect(VerifierStep.usedImpressions(claimed, now: 100_000_000) == used)
    }
}
