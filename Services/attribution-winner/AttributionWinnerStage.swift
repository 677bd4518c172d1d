import AttributionModel
import Foundation
import RedisStreams

/// One batch: WATCH and GET the state of every device it touches, apply the messages in order with
/// the model's pure rules, then write the states, the `attributions` output and the ack at once.
/// A replica racing on the same device makes EXEC fail, and the batch is redone from fresh state.
struct AttributionWinnerStage: StreamStage {
    let policy: TimePolicy

    /// Per device and advertised app. Device identifiers stay in these keys: nothing downstream sees them.
    static func stateKey(device: String, app: ItemIdentifier) -> String { "winner:device:\(app):\(device)" }

    /// Kept while an impression (30 days) could still lead to a conversion whose windows (35 days) run.
    var stateTTL: Milliseconds { policy.milliseconds(.days(66)) }

    func key(for envelope: Envelope) -> String? {
        switch envelope.body {
        case .impressionVerified(let i): Self.stateKey(device: i.deviceIdentifier, app: i.payload.advertisedItemIdentifier)
        case .conversionVerified(let c): Self.stateKey(device: c.report.deviceIdentifier, app: c.report.advertisedItemIdentifier)
        case .updateVerified(let u): Self.stateKey(device: u.deviceIdentifier, app: u.advertisedItemIdentifier)
        default: nil
        }
    }

    /// The batch decoded once, with the device keys it touches in first-seen order.
    struct Batch: Sendable {
        var envelopes: [Envelope?]
        var keys: [String]
    }

    func prepare(_ entries: [StreamEntry]) -> Batch {
        let envelopes = entries.map { try? Envelope.decode($0.message) }
        var seen = Set<String>()
        let keys = envelopes.compactMap { $0.flatMap(key(for:)) }.filter { seen.insert($0).inserted }
        return Batch(envelopes: envelopes, keys: keys)
    }

    func reads(for batch: Batch) -> StageReads {
        StageReads(watch: batch.keys, commands: batch.keys.map { RedisCommand("GET", $0) })
    }

    func decide(_ batch: Batch, state: [RedisReply]) async -> [StageOutcome] {
        var states: [String: DeviceAttributionState] = [:]
        for (key, reply) in zip(batch.keys, state) {
            if case .bulk(let bytes) = reply {
                states[key] = (try? JSONCoding.decoder.decode(DeviceAttributionState.self, from: Data(bytes))) ?? .init()
            }
        }
        var outcomes: [StageOutcome] = []
        for envelope in batch.envelopes {
            guard let envelope, let key = key(for: envelope) else {
                outcomes.append(.failed("attribution-winner takes verified impressions, conversions and updates"))
                continue
            }
            var device = states[key] ?? DeviceAttributionState()
            var outputs: [Envelope] = []
            switch envelope.body {
            case .impressionVerified(let impression):
                device.record(impression)
            case .conversionVerified(let conversion):
                // The conversion id derives from the event id, so a redone batch makes the same one.
                if let (attribution, updates) = device.attribute(
                    conversion, conversionIdentifier: envelope.id, policy: policy)
                {
                    outputs.append(Envelope(id: envelope.id, time: envelope.time, body: .conversionAttributed(attribution)))
                    outputs += updates.map { Envelope(time: $0.time, body: .updateAttributed($0)) }
                }
            case .updateVerified(let report):
                if let routed = device.receive(report) {
                    outputs.append(Envelope(id: envelope.id, time: envelope.time, body: .updateAttributed(routed)))
                }
            default: break
            }
            states[key] = device
            let json = (try? JSONCoding.encoder.encode(device)).map(Array.init) ?? []
            outcomes.append(
                .write(
                    [
                        RedisCommand(bytes: [
                            Array("SET".utf8), Array(key.utf8), json, Array("PX".utf8), Array(String(stateTTL).utf8),
                        ])
                    ]
                        + outputs.map { StreamCommands.add(StreamNames.attributions, message: $0.encoded()) }))
        }
        return outcomes
    }
}
