import AttributionModel
import Foundation
import Metrics
import RedisStreams
import ServiceRuntime

/// The verifier's batch: one read pipeline (replay markers, registry entries, the device's recent
/// views), then one transaction that marks impressions as seen, records views, writes `verified` /
/// `rejected` (and the refusal logs ingest's admin API shows), and acknowledges.
struct VerifierStage: StreamStage {
    let policy: TimePolicy

    /// One impression may be used once: its id is remembered for as long as it could be fresh.
    static func replayKey(_ impressionIdentifier: String) -> String { "verifier:seen:\(impressionIdentifier)" }

    /// One network's views of one advertised app on one device: a sorted set of "begin:end" by end.
    static func viewsKey(device: String, app: ItemIdentifier, network: AdNetworkIdentifier) -> String {
        DeviceKeys.verifierViews(device: device, app: app, network: network)
    }

    struct Plan: Sendable {
        var envelopes: [Envelope?] = []
        var parsed: [Int: Result<ImpressionVerification.Parsed, ImpressionVerification.Refusal>] = [:]
        var replayKeys: [String] = []
        var registry = RegistrySnapshot.Request()
        /// Per view impression (by entry index): its views key, in the order the reads ask for them.
        var viewKeys: [(index: Int, key: String, interval: ViewInterval)] = []
    }

    func prepare(_ batch: [StreamEntry]) -> Plan {
        var plan = Plan()
        var networks = Set<String>()
        var publishers = Set<ItemIdentifier>()
        var advertised = Set<ItemIdentifier>()
        for (index, entry) in batch.enumerated() {
            let envelope = try? Envelope.decode(entry.message)
            plan.envelopes.append(envelope)
            switch envelope?.body {
            case .impressionReported(let report):
                let parsed = Result { () throws(ImpressionVerification.Refusal) in try ImpressionVerification.parse(report) }
                plan.parsed[index] = parsed
                guard case .success(let p) = parsed else { continue }
                networks.insert(p.payload.adNetworkIdentifier.rawValue)
                publishers.insert(p.payload.publisherItemIdentifier)
                advertised.insert(p.payload.advertisedItemIdentifier)
                plan.replayKeys.append(Self.replayKey(p.payload.impressionIdentifier))
                if report.interaction.type == .view, let begin = report.interaction.begin {
                    let key = Self.viewsKey(
                        device: report.deviceIdentifier, app: p.payload.advertisedItemIdentifier,
                        network: p.payload.adNetworkIdentifier)
                    plan.viewKeys.append((index, key, ViewInterval(begin: begin, end: report.interaction.time)))
                }
            case .conversionReported(let report): advertised.insert(report.advertisedItemIdentifier)
            case .updateReported(let report): advertised.insert(report.advertisedItemIdentifier)
            case .activityReported(let report): advertised.insert(report.advertisedItemIdentifier)
            default: break
            }
        }
        plan.registry = .init(
            adNetworks: networks.sorted(), publisherApps: publishers.sorted(), advertisedApps: advertised.sorted())
        return plan
    }

    func reads(for plan: Plan) -> StageReads {
        // WATCH the replay markers and view sets: two replicas given the same impression (or overlapping
        // views of one device) cannot both accept.
        let viewReads = plan.viewKeys.map { RedisCommand("ZRANGEBYSCORE", $0.key, "(\($0.interval.begin)", "+inf") }
        return StageReads(
            watch: plan.replayKeys + Set(plan.viewKeys.map(\.key)).sorted(),
            commands: plan.replayKeys.map { RedisCommand("EXISTS", $0) } + plan.registry.commands + viewReads)
    }

    func decide(_ plan: Plan, state: [RedisReply]) async -> [StageOutcome] {
        var seen = Set<String>()
        for (key, reply) in zip(plan.replayKeys, state) where reply.int == 1 { seen.insert(key) }
        let registry = RegistrySnapshot(request: plan.registry, state: state, offset: plan.replayKeys.count)
        // Views already recorded that end after each new view begins (the only ones it can overlap).
        var views: [String: [ViewInterval]] = [:]
        let viewReplies = state.dropFirst(plan.replayKeys.count + plan.registry.commands.count)
        for (view, reply) in zip(plan.viewKeys, viewReplies) {
            views[view.key, default: []] += reply.elements.compactMap { $0.string.flatMap(ViewInterval.init(member:)) }
        }
        let viewByIndex = Dictionary(plan.viewKeys.map { ($0.index, ($0.key, $0.interval)) }, uniquingKeysWith: { a, _ in a })
        let freshFor =
            policy.milliseconds(ImpressionRules.maximumAge) + TimePolicy.realTime.milliseconds(ImpressionRules.futureTolerance)

        return plan.envelopes.indices.map { index -> StageOutcome in
            guard let envelope = plan.envelopes[index] else { return .failed("not a pipeline envelope") }
            func reject(_ refusal: ImpressionVerification.Refusal, app: ItemIdentifier? = nil) -> StageOutcome {
                .write(Self.rejection(refusal, event: envelope, app: app))
            }
            func pass(_ body: MessageBody) -> [RedisCommand] {
                [
                    StreamCommands.add(
                        StreamNames.verified, message: Envelope(id: envelope.id, time: envelope.time, body: body).encoded())
                ]
            }
            switch envelope.body {
            case .impressionReported(let report):
                let parsed: ImpressionVerification.Parsed
                switch plan.parsed[index] {
                case .success(let p)?: parsed = p
                case .failure(let refusal)?: return reject(refusal)
                case nil: return .failed("impression was not parsed")
                }
                let payload = parsed.payload
                let key = Self.replayKey(payload.impressionIdentifier)
                func refusal(_ reason: RejectionReason, _ detail: String) -> ImpressionVerification.Refusal {
                    .init(
                        reason: reason, detail: detail, adNetworkIdentifier: payload.adNetworkIdentifier.rawValue,
                        impressionIdentifier: payload.impressionIdentifier)
                }
                do throws(ImpressionVerification.Refusal) {
                    try ImpressionVerification.verify(parsed, report: report, registry: registry, policy: policy)
                } catch { return reject(error) }
                guard !seen.contains(key) else {
                    return reject(refusal(.impressionReplayed, "this impression-identifier was already used"))
                }
                var writes = [RedisCommand("SET", key, "1", "PX", String(freshFor))]
                if let (viewsKey, interval) = viewByIndex[index] {
                    if views[viewsKey, default: []].contains(where: interval.overlaps) {
                        return reject(
                            refusal(.overlappingView, "this network already had a view of this app open on this device then"))
                    }
                    views[viewsKey, default: []].append(interval)
                    writes += [
                        RedisCommand("ZADD", viewsKey, String(interval.end), interval.member),
                        RedisCommand("ZREMRANGEBYSCORE", viewsKey, "-inf", String(interval.end - freshFor)),
                        RedisCommand("PEXPIRE", viewsKey, String(freshFor)),
                    ]
                }
                seen.insert(key)
                let verified = VerifiedImpression(
                    deviceIdentifier: report.deviceIdentifier, payload: payload, interaction: report.interaction,
                    kind: parsed.kind)
                return .write(writes + pass(.impressionVerified(verified)))
            case .conversionReported(let report):
                guard let app = registry.advertisedApps[report.advertisedItemIdentifier] else {
                    return reject(Self.unknownApp(report.advertisedItemIdentifier), app: report.advertisedItemIdentifier)
                }
                return .write(pass(.conversionVerified(VerifiedConversion(report: report, app: app))))
            case .updateReported(let report):
                guard registry.advertisedApps[report.advertisedItemIdentifier] != nil else {
                    return reject(Self.unknownApp(report.advertisedItemIdentifier), app: report.advertisedItemIdentifier)
                }
                return .write(pass(.updateVerified(report)))
            case .activityReported(let report):
                guard registry.advertisedApps[report.advertisedItemIdentifier] != nil else {
                    return reject(Self.unknownApp(report.advertisedItemIdentifier), app: report.advertisedItemIdentifier)
                }
                return .write(pass(.activityVerified(report)))
            default:
                return .failed("verifier does not take \(envelope.type.rawValue) messages")
            }
        }
    }

    static func unknownApp(_ item: ItemIdentifier) -> ImpressionVerification.Refusal {
        .init(reason: .unknownAdvertisedApp, detail: "advertised app \(item) is not registered")
    }

    /// The `rejected` entry, the refusal logs of its network (or app), and a count per reason.
    static func rejection(_ refusal: ImpressionVerification.Refusal, event: Envelope, app: ItemIdentifier?) -> [RedisCommand] {
        let rejection = Rejection(
            reason: refusal.reason, detail: refusal.detail, eventIdentifier: event.id,
            adNetworkIdentifier: refusal.adNetworkIdentifier, impressionIdentifier: refusal.impressionIdentifier)
        Counter(label: "verifier_rejections_total", dimensions: [("reason", refusal.reason.rawValue)]).increment()
        var commands = [rejection.entry(at: event.time)]
        let log = refusal.adNetworkIdentifier.map(RejectionLog.networkKey) ?? app.map { RejectionLog.appKey(String($0)) }
        if let log, let json = try? JSONCoding.encoder.encode(rejection) {
            commands += [
                RedisCommand(bytes: [Array("LPUSH".utf8), Array(log.utf8), Array(json)]),
                RedisCommand("LTRIM", log, "0", String(RejectionLog.capacity - 1)),
                RedisCommand("PEXPIRE", log, String(30 * 86_400_000)),
            ]
        }
        return commands
    }
}
