import AttributionModel
import RedisStreams

/// The verifier's batch: one read pipeline (replay markers and registry entries), then one
/// transaction that marks impressions as seen, writes `verified` / `rejected`, and acknowledges.
struct VerifierStage: StreamStage {
    let policy: TimePolicy

    /// One impression may be used once: its id is remembered for as long as it could be fresh.
    static func replayKey(_ impressionIdentifier: String) -> String { "verifier:seen:\(impressionIdentifier)" }

    struct Plan {
        var envelopes: [Envelope?] = []
        var parsed: [Int: Result<ImpressionVerification.Parsed, ImpressionVerification.Refusal>] = [:]
        var replayKeys: [String] = []
        var registry = RegistrySnapshot.Request()
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
                if case .success(let p) = parsed {
                    networks.insert(p.payload.adNetworkIdentifier.rawValue)
                    publishers.insert(p.payload.publisherItemIdentifier)
                    advertised.insert(p.payload.advertisedItemIdentifier)
                    plan.replayKeys.append(Self.replayKey(p.payload.impressionIdentifier))
                }
            case .conversionReported(let report): advertised.insert(report.advertisedItemIdentifier)
            case .updateReported(let report): advertised.insert(report.advertisedItemIdentifier)
            default: break
            }
        }
        plan.registry = .init(
            adNetworks: networks.sorted(), publisherApps: publishers.sorted(), advertisedApps: advertised.sorted())
        return plan
    }

    func reads(for plan: Plan) -> StageReads {
        // WATCH the replay markers: two replicas given the same impression cannot both accept it.
        return StageReads(
            watch: plan.replayKeys,
            commands: plan.replayKeys.map { RedisCommand("EXISTS", $0) } + plan.registry.commands)
    }

    func decide(_ plan: Plan, state: [RedisReply]) async -> [StageOutcome] {
        var seen = Set<String>()
        for (key, reply) in zip(plan.replayKeys, state) where reply.int == 1 { seen.insert(key) }
        let registry = RegistrySnapshot(request: plan.registry, state: state, offset: plan.replayKeys.count)
        let replayTTL = String(
            policy.milliseconds(ImpressionRules.maximumAge) + TimePolicy.realTime.milliseconds(ImpressionRules.futureTolerance))

        return plan.envelopes.indices.map { index -> StageOutcome in
            guard let envelope = plan.envelopes[index] else { return .failed("not a pipeline envelope") }
            func reject(_ refusal: ImpressionVerification.Refusal) -> StageOutcome {
                let rejection = Rejection(
                    reason: refusal.reason, detail: refusal.detail, eventIdentifier: envelope.id,
                    adNetworkIdentifier: refusal.adNetworkIdentifier, impressionIdentifier: refusal.impressionIdentifier)
                return .write([
                    StreamCommands.add(
                        StreamNames.rejected, message: Envelope(time: envelope.time, body: .rejected(rejection)).encoded())
                ])
            }
            func pass(_ body: MessageBody) -> [RedisCommand] {
                [
                    StreamCommands.add(
                        StreamNames.verified, message: Envelope(id: envelope.id, time: envelope.time, body: body).encoded())
                ]
            }
            switch envelope.body {
            case .impressionReported(let report):
                guard case .success(let parsed)? = plan.parsed[index] else {
                    if case .failure(let refusal)? = plan.parsed[index] { return reject(refusal) }
                    return .failed("impression was not parsed")
                }
                let key = Self.replayKey(parsed.payload.impressionIdentifier)
                do throws(ImpressionVerification.Refusal) {
                    try ImpressionVerification.verify(parsed, report: report, registry: registry, policy: policy)
                } catch { return reject(error) }
                guard seen.insert(key).inserted else {
                    return reject(
                        .init(
                            reason: .impressionReplayed, detail: "this impression-identifier was already used",
                            adNetworkIdentifier: parsed.payload.adNetworkIdentifier.rawValue,
                            impressionIdentifier: parsed.payload.impressionIdentifier))
                }
                let verified = VerifiedImpression(
                    deviceIdentifier: report.deviceIdentifier, payload: parsed.payload, interaction: report.interaction,
                    kind: .adAttributionKit)
                return .write([RedisCommand("SET", key, "1", "PX", replayTTL)] + pass(.impressionVerified(verified)))
            case .conversionReported(let report):
                guard let app = registry.advertisedApps[report.advertisedItemIdentifier] else {
                    return reject(
                        .init(
                            reason: .unknownAdvertisedApp,
                            detail: "advertised app \(report.advertisedItemIdentifier) is not registered"))
                }
                return .write(pass(.conversionVerified(VerifiedConversion(report: report, app: app))))
            case .updateReported(let report):
                guard registry.advertisedApps[report.advertisedItemIdentifier] != nil else {
                    return reject(
                        .init(
                            reason: .unknownAdvertisedApp,
                            detail: "advertised app \(report.advertisedItemIdentifier) is not registered"))
                }
                return .write(pass(.updateVerified(report)))
            default:
                return .failed("verifier does not take \(envelope.type.rawValue) messages")
            }
        }
    }
}
