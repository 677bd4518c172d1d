/// The envelope's hand-written compact form (`CompactHandCoded`) for the bodies every event carries
/// through the stages: impressions, conversions and value updates as reported and verified (ingest →
/// verifier → attribution-winner), attributions and attributed updates (→ scheduler) and the
/// scheduler's window timers. Other bodies (refusals, activity, supersessions, retries) are written
/// and read through `Codable` (`CompactCoding.encode` and `decode` fall back when these throw).
extension Envelope: CompactHandCoded {
    func write(to writer: inout CompactWriter) throws {
        try writer.keyed { writer in
            writer.field("type", type)
            writer.field("id", id)
            writer.field("time", time)
            writer.field("schema", schema)
            writer.key("body")
            switch body {
            case .impressionVerified(let impression): impression.write(to: &writer)
            case .impressionReported(let report): try report.write(to: &writer)
            case .conversionReported(let report): report.write(to: &writer)
            case .conversionVerified(let conversion): try conversion.write(to: &writer)
            case .updateReported(let report), .updateVerified(let report): try report.write(to: &writer)
            case .updateAttributed(let update): try update.write(to: &writer)
            case .conversionAttributed(let attribution): attribution.write(to: &writer)
            case .windowClosed(let timer): timer.write(to: &writer)
            default: throw CompactReader.Mismatch()
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            let type = try reader.raw("type", as: MessageType.self)
            let id = try reader.string("id")
            let time: Milliseconds = try reader.signed("time")
            let schema = try reader.signed("schema", as: Int.self)
            try reader.key("body")
            let body: MessageBody
            switch type {
            case .impressionVerified: body = .impressionVerified(try VerifiedImpression(reading: &reader))
            case .impressionReported: body = .impressionReported(try ImpressionReport(reading: &reader))
            case .conversionReported: body = .conversionReported(try ConversionReport(reading: &reader))
            case .conversionVerified: body = .conversionVerified(try VerifiedConversion(reading: &reader))
            case .updateReported: body = .updateReported(try ValueUpdateReport(reading: &reader))
            case .updateVerified: body = .updateVerified(try ValueUpdateReport(reading: &reader))
            case .updateAttributed: body = .updateAttributed(try AttributedUpdate(reading: &reader))
            case .conversionAttributed: body = .conversionAttributed(try Attribution(reading: &reader))
            case .windowClosed: body = .windowClosed(try WindowClosed(reading: &reader))
            default: throw CompactReader.Mismatch()
            }
            var envelope = Envelope(id: id, time: time, body: body)
            envelope.schema = schema
            return envelope
        }
    }
}

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

extension ImpressionReport {
    /// An AdAttributionKit report; a SKAdNetwork one (its impression a structure of its own) goes through `Codable`.
    func write(to writer: inout CompactWriter) throws {
        guard skadnetworkImpression == nil else { throw CompactReader.Mismatch() }
        writer.keyed { writer in
            writer.field("device-identifier", deviceIdentifier)
            writer.field("impression", ifPresent: impression)
            writer.key("interaction")
            interaction.write(to: &writer)
            writer.field("received-at", receivedAt)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            let device = try reader.string("device-identifier")
            let impression = try reader.string("impression")
            try reader.key("interaction")
            let interaction = try Interaction(reading: &reader)
            return ImpressionReport(
                deviceIdentifier: device, impression: impression, interaction: interaction,
                receivedAt: try reader.signed("received-at"))
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

extension WindowClosed {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("conversion-identifier", conversionIdentifier)
            writer.field("window", window)
            writer.field("time", time)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            WindowClosed(
                conversionIdentifier: try reader.string("conversion-identifier"),
                window: try reader.signed("window", as: Int.self),
                time: try reader.signed("time"))
        }
    }
}
