import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Foundation
import RedisStreams
import ServiceRuntime
import Synchronization
import TestSupport
import Testing

/// Which pipeline plays a scenario: production scenarios by crowd tier at scale 172 800 (a day lasts
/// 0.5 s), development ones (3-minute windows, fixed 5-minute delays) at scale 60 (a minute lasts 1 s). A
/// scenario whose events would span more than 40 s at that scale gets a scale 10, 100, … times larger
/// (its own pipeline): its delays become too short to tell apart, but its attributions still show.
struct ScenarioPipelineKind: Hashable, Sendable, CustomStringConvertible {
    var tier: Int
    var development: Bool
    var timeScale: Double
    /// A scenario's own `thresholds`, counted for real: its pipeline plays it alone.
    var thresholds: [Int]? = nil
    var scenario: String? = nil

    /// `CROWD_TIER_THRESHOLDS` forcing the tier for every conversion (the first conversion counts 1).
    var crowdThresholds: String {
        if let thresholds { return thresholds.map(String.init).joined(separator: ",") }
        return switch tier {
        case 3: "1,1,1"
        case 2: "1,1,1000000"
        case 1: "1,1000000,2000000"
        default: "1000000,2000000,3000000"
        }
    }

    /// The longest life of a conversion after its event, in virtual ms: the last window's end plus the
    /// longest delay (35 days + 144 h; development 9 minutes + 10 minutes).
    var conversionLifetime: Milliseconds { development ? 19 * 60_000 : (35 * 24 + 144) * 3_600_000 }

    var description: String {
        let crowds = thresholds.map { "thresholds \($0.map(String.init).joined(separator: ",")) for \(scenario ?? "")" }
        return "\(crowds ?? "tier \(tier)")\(development ? " development" : "") at scale \(Int(timeScale))"
    }

    var order: Double { Double(development ? 10 : 0) + Double(tier) + timeScale / 1e12 }
}

/// A scenario that is not played, and why.
struct ExcludedScenario: Error, Sendable {
    let name: String
    let reason: String
}

/// One scenario made concrete for one pipeline: its own advertised app, devices, ad networks (prefixed
/// `sNN-`, with fresh ES256 and SKAN keys) and publisher apps, and the order its events are posted in.
struct ScenarioPlan: Sendable {
    struct NetworkKeys: Sendable {
        let id: String
        let key: P256.Signing.PrivateKey
        let skanKey: P256.Signing.PrivateKey
    }

    let name: String
    let scenario: Scenario
    let number: Int
    let kind: ScenarioPipelineKind
    let app: ItemIdentifier
    /// Scenario network name → its registered network.
    let networks: [String: NetworkKeys]
    /// Scenario publisher id → the unique id used here (0 stays 0: development).
    let publishers: [ItemIdentifier: ItemIdentifier]
    /// Scenario device name → device identifier.
    let devices: [String: String]
    let impressions: [String: ScenarioImpression]
    let conversions: [String: ScenarioConversion]
    /// Indexes into `scenario.events` in the order they are posted: `arrival` if given, else by `at`
    /// (ties: file order).
    let order: [Int]
    /// View begin times (real ms offsets before the view's end), per event index: 3 s, shortened to
    /// touch the previous view of the same network and device when they are closer in real time.
    let viewLengths: [Int: Milliseconds]

    static let defaultPublisher: ItemIdentifier = 5_838_492

    var scale: Double { kind.timeScale }

    /// Event times → real offsets from the run's base (`realOffsets`).
    let eventOffsets: [Milliseconds: Milliseconds]
    /// Scenario impression id → impression identifier: fresh UUIDs, sorted like the scenario ids so that
    /// ties broken by impression id keep the scenario's order.
    let impressionIdentifiers: [String: String]

    /// The real offset of a virtual time from the run's base.
    func real(_ virtual: Milliseconds) -> Milliseconds {
        eventOffsets[virtual] ?? Milliseconds((Double(virtual) / scale).rounded())
    }

    /// Whether the conversion's winner is a development impression (publisher 0).
    func isDevelopment(conversion: String) -> Bool {
        guard let winner = scenario.expected.attributions.first(where: { $0.conversion == conversion })?.winner,
            let impression = impressions[winner]
        else { return kind.development }
        return (impression.publisher ?? Self.defaultPublisher) == 0
    }

    /// Real offsets (ms from the base) of every distinct `at`: `at / scale` rounded, then kept on the
    /// right side of a boundary: when two times differ by a whole number of real ms give or take a few
    /// virtual ms (up to 10; an update "1 ms before the window's end", a conversion "1 ms after the cooldown"),
    /// the real difference is that number ∓ `boundaryMargin` (exact stays exact). The margin is more
    /// than 1 ms because windows close on the scheduler's timers (processing time, polled every 100 ms)
    /// while updates are placed by their time: an update stamped 1 ms before an end and processed a few
    /// ms after it is dropped. Finally strictly increasing, so distinct virtual times keep their order.
    static let boundaryMargin: Milliseconds = 150

    static func realOffsets(_ times: [Milliseconds], scale: Double) -> [Milliseconds: Milliseconds] {
        let near = 10.0  // virtual ms: "1 ms before/after" style boundaries
        var offsets: [Milliseconds: Milliseconds] = [:]
        var earlier: [Milliseconds] = []
        for at in Set(times).sorted() {
            var offset = Milliseconds((Double(at) / scale).rounded())
            var atLeast = Milliseconds.min
            var atMost = Milliseconds.max
            for before in earlier {
                let difference = Double(at - before)
                let whole = (difference / scale).rounded()
                let off = difference - whole * scale
                guard abs(off) < near else { continue }
                let base = offsets[before]! + Milliseconds(whole)
                if off > 0 {
                    atLeast = max(atLeast, base + boundaryMargin)
                } else if off < 0 {
                    atMost = min(atMost, base - boundaryMargin)
                } else {
                    atLeast = max(atLeast, base)
                    atMost = min(atMost, base)
                }
            }
            offset = min(max(offset, atLeast), atMost)
            if let previous = earlier.last.flatMap({ offsets[$0] }), offset <= previous { offset = previous + 1 }
            offsets[at] = offset
            earlier.append(at)
        }
        return offsets
    }

    /// Classifies and prepares a scenario, or says why it cannot run under scaled time.
    /// `slowdown` divides the scale (a replay after the pipeline fell behind its clock).
    static func make(name: String, scenario: Scenario, number: Int, slowdown: Double = 1)
        -> Result<ScenarioPlan, ExcludedScenario>
    {
        func exclude(_ reason: String) -> Result<ScenarioPlan, ExcludedScenario> {
            .failure(ExcludedScenario(name: name, reason: reason))
        }
        let impressions = Dictionary(
            scenario.events.compactMap { $0.impression.map { ($0.id, $0) } }, uniquingKeysWith: { a, _ in a })
        let conversions = Dictionary(
            scenario.events.compactMap { $0.conversion.map { ($0.id, $0) } }, uniquingKeysWith: { a, _ in a })
        let winners = scenario.expected.attributions.compactMap { impressions[$0.winner] }
        let developmentWinners = winners.filter { ($0.publisher ?? defaultPublisher) == 0 }
        let allDevelopment =
            !impressions.isEmpty && impressions.values.allSatisfy { ($0.publisher ?? defaultPublisher) == 0 }
        var kind: ScenarioPipelineKind
        if !developmentWinners.isEmpty && developmentWinners.count < winners.count {
            return exclude(
                "mixes development and production winners: development windows (3 min) and production windows (days) "
                    + "cannot both be played at one time scale")
        } else if !developmentWinners.isEmpty || (winners.isEmpty && allDevelopment) {
            kind = ScenarioPipelineKind(tier: scenario.tier ?? 3, development: true, timeScale: 60)
        } else {
            kind = ScenarioPipelineKind(tier: scenario.tier ?? 3, development: false, timeScale: 172_800)
        }
        guard (0...3).contains(kind.tier) else { return exclude("tier \(kind.tier) is not 0–3") }
        if let thresholds = scenario.thresholds {
            guard thresholds.count == 3, CrowdTierThresholds(parsing: thresholds.map(String.init).joined(separator: ",")) != nil
            else { return exclude("thresholds must be 3 non-decreasing counts") }
            kind.thresholds = thresholds
            kind.scenario = name
        }
        let lastAt = scenario.events.map(\.at).max() ?? 0
        while Double(lastAt) / kind.timeScale > 40_000 { kind.timeScale *= 10 }
        kind.timeScale /= slowdown
        let scale = kind.timeScale
        if let arrival = scenario.arrival, arrival.sorted() != Array(scenario.events.indices) {
            return exclude("`arrival` is not a permutation of the event indexes")
        }
        for update in scenario.events.compactMap(\.update) {
            if let tag = update.tagOf, conversions[tag]?.type != .reengagement {
                return exclude("an update's tagOf \"\(tag)\" names no re-engagement conversion")
            }
            if update.skadnetwork == true, update.types != nil || update.tagOf != nil {
                return exclude("an update in SKAdNetwork's shape has no conversion types or tag")
            }
        }

        // Views are 3 s on screen, device time (not scaled): two views of one network on one device
        // closer than that in real time would overlap and the later one be refused. Shorten the later
        // one to begin as the earlier ends (touching is not an overlap) while it keeps its 2 s.
        let eventOffsets = realOffsets(scenario.events.map(\.at), scale: scale)
        var viewLengths: [Int: Milliseconds] = [:]
        var lastViewEnd: [String: Milliseconds] = [:]
        let byTime = scenario.events.indices.sorted { (scenario.events[$0].at, $0) < (scenario.events[$1].at, $1) }
        for index in byTime {
            let event = scenario.events[index]
            // A one-call view has no time on screen: nothing to overlap, nothing to shorten.
            guard let impression = event.impression, impression.interaction == .view, impression.oneCall != true
            else { continue }
            let key = "\(event.device ?? "device")|\(impression.network)"
            let end = eventOffsets[event.at]!
            var length: Milliseconds = 3_000
            if let previous = lastViewEnd[key], end - previous < length {
                length = end - previous
                if length < 2_000 {
                    return exclude(
                        "views \(impression.id) and the one before it (network \(impression.network)) are \(length) ms apart in "
                            + "real time at scale \(Int(scale)): a view lasts at least 2 s of device time (not scaled), so the "
                            + "verifier would refuse the later one as overlapping-view")
                }
            }
            viewLengths[index] = length
            lastViewEnd[key] = end
        }

        let prefix = String(format: "s%02d-", number)
        var networks: [String: NetworkKeys] = [:]
        for network in Set(impressions.values.map(\.network)) {
            let id = prefix + network.lowercased()
            guard AdNetworkIdentifier(id) != nil else { return exclude("network \(network) gives an invalid id \(id)") }
            networks[network] = NetworkKeys(id: id, key: SigningKey.generate(), skanKey: SigningKey.generate())
        }
        var publishers: [ItemIdentifier: ItemIdentifier] = [:]
        for (offset, publisher) in Set(impressions.values.map { $0.publisher ?? defaultPublisher }).sorted().enumerated() {
            publishers[publisher] = publisher == 0 ? 0 : ItemIdentifier(10_000_000 + number * 100 + offset)
        }
        var devices: [String: String] = [:]
        for device in Set(scenario.events.map { $0.device ?? "device" }) {
            devices[device] = "\(prefix)\(device)-\(UUID().uuidString)"
        }
        let order = scenario.arrival ?? byTime
        let identifiers = impressions.keys.map { _ in UUID().uuidString }.sorted()
        let impressionIdentifiers = Dictionary(uniqueKeysWithValues: zip(impressions.keys.sorted(), identifiers))
        return .success(
            ScenarioPlan(
                name: name, scenario: scenario, number: number, kind: kind, app: ItemIdentifier(2_000_000_000 + number),
                networks: networks, publishers: publishers, devices: devices, impressions: impressions,
                conversions: conversions, order: order, viewLengths: viewLengths, eventOffsets: eventOffsets,
                impressionIdentifiers: impressionIdentifiers))
    }
}

/// Plays scenarios against one running pipeline and checks what its receiver verified.
final class ScenarioPipelineRunner: Sendable {
    let pipeline: PipelineProcesses
    let redis: any TestRedis
    let kind: ScenarioPipelineKind
    let http = HTTPTestClient()

    init(pipeline: PipelineProcesses, redis: any TestRedis, kind: ScenarioPipelineKind) {
        self.pipeline = pipeline
        self.redis = redis
        self.kind = kind
        self.progress = VerifierProgress(connection: redis.connect(label: "scenario.verifier-progress"))
    }

    /// What the verifier has done with the events ingest accepted.
    let progress: VerifierProgress

    static func now() -> Milliseconds { Milliseconds(Date().timeIntervalSince1970 * 1000) }

    /// Registers the scenario's networks, publisher apps and advertised app; returns the app key.
    func register(_ plan: ScenarioPlan) async throws -> String {
        let admin = pipeline.adminToken
        func put(_ path: String, _ json: Any) async throws {
            let reply = try await http.send("PUT", pipeline.adminURL + path, json: json, token: admin)
            if reply.status != 200 {
                throw TestSupportError(
                    "\(plan.name): PUT \(path) answered \(reply.status): \(String(decoding: reply.body, as: UTF8.self))")
            }
        }
        for network in plan.networks.values {
            try await put(
                "/v1/admin/ad-networks/\(network.id)",
                [
                    "public-key": network.key.publicKey.pemRepresentation, "postback-url": "\(pipeline.receiverURL)/postbacks",
                    "skan-public-key": network.skanKey.publicKey.derRepresentation.base64EncodedString(),
                ])
        }
        for (publisher, mapped) in plan.publishers where mapped != 0 {
            let listed = Set(
                plan.impressions.values.filter { ($0.publisher ?? ScenarioPlan.defaultPublisher) == publisher }.compactMap {
                    plan.networks[$0.network]?.id
                })
            try await put("/v1/admin/publisher-apps/\(mapped)", ["AdNetworkIdentifiers": listed.sorted()])
        }
        // Per-network windows name the scenario's networks: rename them to the prefixed ids.
        var appJSON =
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(plan.scenario.app ?? IngestRequests.AdvertisedApp()))
            as? [String: Any] ?? [:]
        if let windows = appJSON["AttributionWindows"] as? [String: Any] {
            appJSON["AttributionWindows"] = Dictionary(
                uniqueKeysWithValues: windows.map { key, value in (plan.networks[key]?.id ?? key, value) })
        }
        try await put("/v1/admin/advertised-apps/\(plan.app)", appJSON)
        let reply = try await http.send("POST", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(plan.app)/keys", token: admin)
        guard let key = reply.json["app-key"] as? String else {
            throw TestSupportError("\(plan.name): no app key: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        }
        return key
    }

    /// The longest `settle` waited, ms: evidence that the pipeline fell behind (`PipelineLateness`).
    let longestSettle = Mutex<Milliseconds>(0)

    /// Waits until the verifier has passed on (to `verified`) or refused each of `events`, so
    /// attribution-winner sees the scenario's impressions before the conversion or update posted next.
    /// Up to 10 s: a wait is not a judgement, but one past `PipelineLateness.settleLimit` counts as lateness.
    func settle(_ events: [String]) async throws -> Bool {
        let started = Self.now()
        let held = try await eventually(timeout: .seconds(10), every: .milliseconds(5)) { try await self.progress.holds(events) }
        let waited = Self.now() - started
        longestSettle.withLock { $0 = max($0, waited) }
        return held
    }

    /// Posts the scenario's events, each at its real time `base + at / scale` (later if the arrival order
    /// puts it after a later event). Returns problems (refused requests), or an empty list.
    func play(_ plan: ScenarioPlan, appKey: String, base: Milliseconds) async throws -> [String] {
        var problems: [String] = []
        var tags: [String: String] = [:]
        /// The event identifiers of the scenario's events that ingest accepted (202).
        var accepted: [String] = []
        for index in plan.order {
            let event = plan.scenario.events[index]
            let time = base + plan.real(event.at)
            let wait = time - Self.now()
            if wait > 0 { try await Task.sleep(for: .milliseconds(wait)) }
            let device = plan.devices[event.device ?? "device"]!
            if let impression = event.impression {
                let body = try impressionBody(
                    impression, plan: plan, device: device, time: time, viewLength: plan.viewLengths[index])
                let reply = try await http.send("POST", "\(pipeline.ingestURL)/v1/impressions", json: body)
                if reply.status == 202 {
                    accepted.append(reply.json["event-identifier"] as? String ?? "")
                } else {
                    problems.append(
                        "impression \(impression.id): ingest answered \(reply.status) \(String(decoding: reply.body, as: UTF8.self))"
                    )
                }
                continue
            }
            if try await !settle(accepted) { problems.append("the verifier did not keep up within 10 s before event \(index)") }
            if let conversion = event.conversion {
                var body: [String: Any] = [
                    "device-identifier": device, "advertised-item-identifier": plan.app,
                    "conversion-type": conversion.type.rawValue, "time": time,
                ]
                if conversion.country != "absent" { body["country-code"] = conversion.country ?? "US" }
                if let marketplace = conversion.marketplace { body["marketplace-identifier"] = marketplace }
                if let url = conversion.url { body["reengagement-url"] = url }
                let reply = try await http.send("POST", "\(pipeline.ingestURL)/v1/conversions", json: body, token: appKey)
                if reply.status == 202 {
                    accepted.append(reply.json["event-identifier"] as? String ?? "")
                    if let tag = reply.json["conversion-tag"] as? String { tags[conversion.id] = tag }
                    // The open URL is in the answer whatever attribution decides later.
                    if let expected = plan.scenario.expected.openings?.first(where: { $0.conversion == conversion.id }) {
                        let url = expected.url(tag: tags[conversion.id] ?? "")
                        let actual = reply.json["open-url"] as? String
                        if actual != url {
                            problems.append("conversion \(conversion.id): open-url \(actual ?? "absent"), expected \(url)")
                        }
                    }
                } else {
                    problems.append(
                        "conversion \(conversion.id): ingest answered \(reply.status) \(String(decoding: reply.body, as: UTF8.self))"
                    )
                }
            } else if let update = event.update {
                var body: [String: Any] = ["device-identifier": device, "advertised-item-identifier": plan.app, "time": time]
                // AdAttributionKit's PostbackUpdate, or the arguments of SKAdNetwork's updatePostbackConversionValue.
                let skadnetwork = update.skadnetwork == true
                body[skadnetwork ? "fineValue" : "fineConversionValue"] = update.fine
                if let coarse = update.coarse { body[skadnetwork ? "coarseValue" : "coarseConversionValue"] = coarse.rawValue }
                if let lock = update.lock { body[skadnetwork ? "lockWindow" : "lockPostback"] = lock }
                if let types = update.types { body["conversionTypes"] = types.map(\.rawValue) }
                if let tagOf = update.tagOf {
                    guard let tag = tags[tagOf] else {
                        problems.append("update at \(event.at): no conversion-tag was returned for \(tagOf)")
                        continue
                    }
                    body["conversionTag"] = tag
                }
                let reply = try await http.send(
                    "POST", "\(pipeline.ingestURL)/v1/conversion-value-updates", json: body, token: appKey)
                if reply.status == 202 {
                    accepted.append(reply.json["event-identifier"] as? String ?? "")
                } else {
                    problems.append(
                        "update at \(event.at): ingest answered \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
                }
            }
        }
        return problems
    }

    /// The POST /v1/impressions body: an AdAttributionKit JWS or a SKAdNetwork 4.0 impression, stamped
    /// `createdBefore / scale` before the interaction; device-side durations are real (1 s load, 3 s view).
    func impressionBody(
        _ impression: ScenarioImpression, plan: ScenarioPlan, device: String, time: Milliseconds, viewLength: Milliseconds?
    ) throws -> [String: Any] {
        let network = plan.networks[impression.network]!
        let publisher = plan.publishers[impression.publisher ?? ScenarioPlan.defaultPublisher]!
        let timestamp = time - plan.real(impression.createdBefore ?? 2_000)
        let interaction: [String: Any] =
            switch impression.interaction {
            case .click: ["type": "click", "time": time, "loaded-at": time - 1_000]
            case .view where impression.oneCall == true: ["type": "view", "time": time]
            case .view: ["type": "view", "begin": time - (viewLength ?? 3_000), "time": time]
            }
        switch impression.kind ?? .adAttributionKit {
        case .adAttributionKit:
            let payload = ImpressionPayload(
                impressionIdentifier: plan.impressionIdentifiers[impression.id]!,
                adNetworkIdentifier: AdNetworkIdentifier(network.id)!,
                advertisedItemIdentifier: plan.app, publisherItemIdentifier: publisher,
                sourceIdentifier: impression.source ?? 5239, timestamp: timestamp,
                eligibleForReengagement: impression.eligibleForReengagement)
            let jws = try CompactJWS.sign(payload: JSONCoding.encoder.encode(payload), keyID: network.id, with: network.key)
            return ["device-identifier": device, "impression": jws, "interaction": interaction]
        case .skAdNetwork:
            var skan = SKANImpression(
                adNetworkIdentifier: AdNetworkIdentifier(network.id)!, sourceIdentifier: impression.source ?? 5239,
                itunesItemIdentifier: plan.app, nonce: plan.impressionIdentifiers[impression.id]!.lowercased(),
                sourceAppIdentifier: publisher,
                fidelityType: impression.interaction == .click ? 1 : 0, timestamp: timestamp)
            skan.signature = try SKANSignature.sign(message: skan.signedMessage, with: network.skanKey)
            let json = try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(skan))
            return ["device-identifier": device, "skadnetwork-impression": json, "interaction": interaction]
        }
    }

    /// When every postback the scenario can cause has had its chance: the last expected arrival, and the
    /// end of the lifetime of a conversion posted at the last event, plus the tolerance.
    static func deadline(_ plan: ScenarioPlan, base: Milliseconds) -> Milliseconds {
        let lastAt = plan.scenario.events.map(\.at).max() ?? 0
        var end = plan.real(lastAt + plan.kind.conversionLifetime)
        for expected in plan.scenario.expected.postbacks {
            end = max(end, plan.real(expected.preparedAt) + delayRange(expected, plan: plan).upperBound)
        }
        return base + end + 1_500
    }

    /// The scaled delay range of an expected postback, real ms.
    static func delayRange(_ expected: ExpectedPostback, plan: ScenarioPlan) -> ClosedRange<Milliseconds> {
        let policy = TimePolicy(scale: plan.scale)
        if let fixed = expected.delay {
            let delay = policy.milliseconds(.milliseconds(fixed))
            return delay...delay
        }
        let range = PostbackDelay.range(
            sequenceIndex: expected.window, development: plan.isDevelopment(conversion: expected.conversion))
        return policy.milliseconds(range.lowerBound)...policy.milliseconds(range.upperBound)
    }

    /// A received, verified postback.
    struct Received {
        let receivedAt: Milliseconds
        let postback: VerifiedPostback
    }

    /// How close matched postbacks' due times came to the edges of their delay ranges (real ms): the
    /// largest past the upper end, the smallest margin after the lower end; and the longest receipt
    /// after a due time.
    struct Margins: Sendable {
        var latestPastUpper: Milliseconds = .min
        var earliestAfterLower: Milliseconds = .max
        var latestReceipt: Milliseconds = .min

    }

    /// How far a due time may stray from the scenario's delay range (real ms): the real offsets keep
    /// "1 ms before/after" boundaries `ScenarioPlan.boundaryMargin` (150 ms) apart, and rounding adds a ms.
    static let dueTolerance: Milliseconds = 200
    /// The longest a postback may arrive after the due time the scheduler recorded, ms: the old arrival
    /// tolerance past a delay range's end, now counted from the due time itself. A pipeline behind its
    /// scaled clock (it wrote the postback when already due) exceeds it; the scenario is then played again
    /// at a slower scale (`PipelineLateness`), where the same limit holds.
    static let lateLimit: Milliseconds = 1_500

    static func timing(
        receivedAt: Milliseconds, expected: ExpectedPostback, release: PostbackRelease?, plan: ScenarioPlan,
        base: Milliseconds
    ) -> [String] {
        let prepared = base + plan.real(expected.preparedAt)
        let range = delayRange(expected, plan: plan)
        let expectation =
            "\(range.lowerBound)…\(range.upperBound) ms after preparedAt \(expected.preparedAt) (+\(prepared - base) ms real, "
            + "±\(dueTolerance) ms)"
        guard let release else {
            let delay = receivedAt - prepared
            return [
                "received \(delay) ms after preparedAt, but no release into `postbacks` is recorded for it: expected due "
                    + expectation
            ]
        }
        var found: [String] = []
        let delay = release.dueAt - prepared
        if delay < range.lowerBound - dueTolerance || delay > range.upperBound + dueTolerance {
            found.append("the scheduler set it due \(delay) ms after preparedAt, expected \(expectation)")
        }
        if receivedAt < release.dueAt {
            found.append("received \(release.dueAt - receivedAt) ms before the due time the scheduler recorded")
        }
        if receivedAt - release.dueAt > lateLimit {
            found.append(
                "received \(receivedAt - release.dueAt) ms after the due time the scheduler recorded (released "
                    + "\(release.releasedAt - release.dueAt) ms after it, delivered \(receivedAt - release.releasedAt) ms "
                    + "after its release), expected at most \(lateLimit) ms; \(MachineSpeed.description)")
        }
        return found
    }

    /// Checks the postbacks received for the scenario's app against `expected.postbacks`; returns what
    /// differed (empty when everything matched).
    static func check(
        _ plan: ScenarioPlan, received: [Received], releases: [String: PostbackRelease], base: Milliseconds,
        margins: inout Margins
    ) -> [String] {
        var problems: [String] = []
        var unmatched = plan.scenario.expected.postbacks
        let ordered = received.sorted { $0.receivedAt < $1.receivedAt }
        for item in ordered {
            let payload = item.postback.payload
            let body = item.postback.body
            // Candidates: same network, did-win, sequence index and conversion type.
            let candidates = unmatched.indices.filter { position in
                let expected = unmatched[position]
                guard let impression = plan.impressions[expected.impression],
                    let conversion = plan.conversions[expected.conversion]
                else { return false }
                return plan.networks[impression.network]?.id == payload.adNetworkIdentifier.rawValue
                    && expected.didWin == payload.didWin && expected.window == payload.postbackSequenceIndex
                    && conversion.type == payload.conversionType
            }
            let describe =
                "\(payload.adNetworkIdentifier.rawValue) did-win \(payload.didWin) window \(payload.postbackSequenceIndex) "
                + "\(payload.conversionType.rawValue) source \(payload.sourceIdentifier) fine \(body.conversionValue.map(String.init) ?? "-") "
                + "coarse \(body.coarseConversionValue?.rawValue ?? "-") received at +\(item.receivedAt - base) ms"
            guard !candidates.isEmpty else {
                let refused = (plan.scenario.expected.refusals ?? []).filter {
                    plan.conversions[$0.conversion]?.type == payload.conversionType
                }
                let note = refused.isEmpty ? "" : " (the scenario expects no postback for refused \(refused.map(\.conversion)))"
                problems.append("unexpected postback: \(describe)\(note)")
                continue
            }
            // The candidate this postback fits best (fewest differences).
            let scored = candidates.map { position in
                (
                    position, unmatched[position],
                    differences(
                        item, expected: unmatched[position], release: releases[payload.postbackIdentifier], plan: plan,
                        base: base)
                )
            }
            let best = scored.min { $0.2.count < $1.2.count }!
            for difference in best.2 {
                problems.append(
                    "postback for \(best.1.conversion)/\(best.1.impression) window \(best.1.window) did-win \(best.1.didWin): \(difference)"
                )
            }
            let range = delayRange(best.1, plan: plan)
            if let due = releases[payload.postbackIdentifier]?.dueAt {
                let delay = due - (base + plan.real(best.1.preparedAt))
                margins.latestReceipt = max(margins.latestReceipt, item.receivedAt - due)
                margins.latestPastUpper = max(margins.latestPastUpper, delay - range.upperBound)
                margins.earliestAfterLower = min(margins.earliestAfterLower, delay - range.lowerBound)
            }
            unmatched.remove(at: best.0)
        }
        for expected in unmatched {
            let range = delayRange(expected, plan: plan)
            problems.append(
                "missing postback for \(expected.conversion)/\(expected.impression) window \(expected.window) did-win \(expected.didWin) "
                    + "(due +\(plan.real(expected.preparedAt) + range.lowerBound)…+\(plan.real(expected.preparedAt) + range.upperBound) ms)"
            )
        }
        return problems
    }

    static func differences(
        _ item: Received, expected: ExpectedPostback, release: PostbackRelease?, plan: ScenarioPlan, base: Milliseconds
    ) -> [String] {
        var found: [String] = []
        let payload = item.postback.payload
        let body = item.postback.body
        if body.conversionValue != expected.fine {
            found.append(
                "conversion-value \(body.conversionValue.map(String.init) ?? "absent"), expected \(expected.fine.map(String.init) ?? "absent")"
            )
        }
        if body.coarseConversionValue != expected.coarse {
            found.append(
                "coarse-conversion-value \(body.coarseConversionValue?.rawValue ?? "absent"), expected \(expected.coarse?.rawValue ?? "absent")"
            )
        }
        if let marketplace = expected.marketplace, payload.marketplaceIdentifier != marketplace {
            found.append("marketplace-identifier \(payload.marketplaceIdentifier ?? "absent"), expected \(marketplace)")
        }
        if let mismatch = expected.countryMismatch(body.countryCode) { found.append(mismatch) }
        if let impression = plan.impressions[expected.impression] {
            let source = String(impression.source ?? 5239)
            if let digits = expected.sourceDigits, payload.sourceIdentifier.count != digits {
                found.append(
                    "source-identifier \(payload.sourceIdentifier) has \(payload.sourceIdentifier.count) digits, expected \(digits)"
                )
            }
            let padded = String(format: "%04d", impression.source ?? 5239)
            if !source.hasSuffix(payload.sourceIdentifier) && !padded.hasSuffix(payload.sourceIdentifier) {
                found.append("source-identifier \(payload.sourceIdentifier) is not the end of \(source)")
            }
            // A SKAdNetwork impression gets a SKAdNetwork 4.0 postback, an AdAttributionKit one a JWS.
            let kind: PostbackBodyKind = impression.kind == .skAdNetwork ? .skAdNetwork : .adAttributionKit
            if item.postback.kind != kind {
                found.append("a \(item.postback.kind.rawValue) postback, expected \(kind.rawValue)")
            }
            if body.adInteractionType != impression.interaction {
                found.append(
                    "ad-interaction-type \(body.adInteractionType.rawValue), expected \(impression.interaction.rawValue)")
            }
            if let publisher = payload.publisherItemIdentifier,
                publisher != plan.publishers[impression.publisher ?? ScenarioPlan.defaultPublisher]
            {
                found.append("publisher-item-identifier \(publisher) is not the impression's publisher")
            }
        }
        found += timing(receivedAt: item.receivedAt, expected: expected, release: release, plan: plan, base: base)
        return found
    }
}
