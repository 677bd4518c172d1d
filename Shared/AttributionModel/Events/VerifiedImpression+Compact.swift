/// A verified impression's hand-written compact form, part of a device's attribution state
/// (`DeviceAttributionState+Compact`), which attribution-winner reads and writes on every event of the
/// device, in the order its `Codable` form has (release 0.1.0 stored that form).
extension VerifiedImpression {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("device-identifier", deviceIdentifier)
            writer.key("payload")
            payload.write(to: &writer)
            writer.key("interaction")
            interaction.write(to: &writer)
            writer.field("kind", kind)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            let device = try reader.string("device-identifier")
            try reader.key("payload")
            let payload = try ImpressionPayload(reading: &reader)
            try reader.key("interaction")
            let interaction = try Interaction(reading: &reader)
            return VerifiedImpression(
                deviceIdentifier: device, payload: payload, interaction: interaction,
                kind: try reader.raw("kind", as: ImpressionKind.self))
        }
    }
}

extension ImpressionPayload {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("impression-identifier", impressionIdentifier)
            writer.field("ad-network-identifier", adNetworkIdentifier.rawValue)
            writer.field("advertised-item-identifier", advertisedItemIdentifier)
            writer.field("publisher-item-identifier", publisherItemIdentifier)
            writer.field("source-identifier", sourceIdentifier)
            writer.field("timestamp", timestamp)
            writer.field("impression-type", impressionType)
            writer.field("eligible-for-re-engagement", ifPresent: eligibleForReengagement)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            let impression = try reader.string("impression-identifier")
            guard let network = AdNetworkIdentifier(try reader.string("ad-network-identifier")) else {
                throw CompactReader.Mismatch()
            }
            return ImpressionPayload(
                impressionIdentifier: impression, adNetworkIdentifier: network,
                advertisedItemIdentifier: try reader.unsigned("advertised-item-identifier"),
                publisherItemIdentifier: try reader.unsigned("publisher-item-identifier"),
                sourceIdentifier: try reader.signed("source-identifier", as: Int.self), timestamp: try reader.signed("timestamp"),
                impressionType: try reader.string("impression-type"),
                eligibleForReengagement: try reader.bool(ifPresent: "eligible-for-re-engagement"))
        }
    }
}

extension Interaction {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("type", type)
            writer.field("time", time)
            writer.field("loaded-at", ifPresent: loadedAt)
            writer.field("begin", ifPresent: begin)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            Interaction(
                type: try reader.raw("type", as: InteractionType.self), time: try reader.signed("time"),
                loadedAt: try reader.signed(ifPresent: "loaded-at"), begin: try reader.signed(ifPresent: "begin"))
        }
    }
}
