/// The envelope's hand-written compact form (`CompactHandCoded`) for the bodies every event carries
/// through the stages: impressions, conversions and value updates as reported and verified (ingest →
/// verifier → attribution-winner), attributions and attributed updates (→ scheduler) and the
/// scheduler's window timers. Other bodies (refusals, activity, supersessions, retries) are written
/// and read through `Codable` (`CompactCoding.encode` and `decode` fall back when these throw).
extension Envelope: CompactHandCoded {
    func write(to writer: inout CompactWriter) throws {
        try writer.keyed { writer in
            writer.key("type")
            writer.string(type.rawValue)
            writer.key("id")
            writer.string(id)
            writer.key("time")
            writer.signed(time)
            writer.key("schema")
            writer.signed(schema)
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
        self = try reader.keyed { reader, _ in
            try reader.key("type")
            let type = try reader.raw(MessageType.self)
            try reader.key("id")
            let id = try reader.string()
            try reader.key("time")
            let time: Milliseconds = try reader.signed()
            try reader.key("schema")
            let schema = try reader.signed(Int.self)
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
            writer.key("device-identifier")
            writer.string(deviceIdentifier)
            writer.key("payload")
            payload.write(to: &writer)
            writer.key("interaction")
            interaction.write(to: &writer)
            writer.key("kind")
            writer.string(kind.rawValue)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, _ in
            try reader.key("device-identifier")
            let device = try reader.string()
            try reader.key("payload")
            let payload = try ImpressionPayload(reading: &reader)
            try reader.key("interaction")
            let interaction = try Interaction(reading: &reader)
            try reader.key("kind")
            return VerifiedImpression(
                deviceIdentifier: device, payload: payload, interaction: interaction, kind: try reader.raw(ImpressionKind.self))
        }
    }
}

extension ImpressionReport {
    /// An AdAttributionKit report; a SKAdNetwork one (its impression a structure of its own) goes through `Codable`.
    func write(to writer: inout CompactWriter) throws {
        guard skadnetworkImpression == nil else { throw CompactReader.Mismatch() }
        writer.keyed { writer in
            writer.key("device-identifier")
            writer.string(deviceIdentifier)
            if let impression {
                writer.key("impression")
                writer.string(impression)
            }
            writer.key("interaction")
            interaction.write(to: &writer)
            writer.key("received-at")
            writer.signed(receivedAt)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, end in
            try reader.key("device-identifier")
            let device = try reader.string()
            guard try reader.optionalKey("impression", end: end) else { throw CompactReader.Mismatch() }
            let impression = try reader.string()
            try reader.key("interaction")
            let interaction = try Interaction(reading: &reader)
            try reader.key("received-at")
            return ImpressionReport(
                deviceIdentifier: device, impression: impression, interaction: interaction, receivedAt: try reader.signed())
        }
    }
}

extension ImpressionPayload {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.key("impression-identifier")
            writer.string(impressionIdentifier)
            writer.key("ad-network-identifier")
            writer.string(adNetworkIdentifier.rawValue)
            writer.key("advertised-item-identifier")
            writer.unsigned(advertisedItemIdentifier)
            writer.key("publisher-item-identifier")
            writer.unsigned(publisherItemIdentifier)
            writer.key("source-identifier")
            writer.signed(sourceIdentifier)
            writer.key("timestamp")
            writer.signed(timestamp)
            writer.key("impression-type")
            writer.string(impressionType)
            if let eligibleForReengagement {
                writer.key("eligible-for-re-engagement")
                writer.bool(eligibleForReengagement)
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, end in
            try reader.key("impression-identifier")
            let impression = try reader.string()
            try reader.key("ad-network-identifier")
            guard let network = AdNetworkIdentifier(try reader.string()) else { throw CompactReader.Mismatch() }
            try reader.key("advertised-item-identifier")
            let advertised = try reader.unsigned()
            try reader.key("publisher-item-identifier")
            let publisher = try reader.unsigned()
            try reader.key("source-identifier")
            let source = try reader.signed(Int.self)
            try reader.key("timestamp")
            let timestamp: Milliseconds = try reader.signed()
            try reader.key("impression-type")
            let type = try reader.string()
            let reengagement = try reader.optionalKey("eligible-for-re-engagement", end: end) ? try reader.bool() : nil
            return ImpressionPayload(
                impressionIdentifier: impression, adNetworkIdentifier: network, advertisedItemIdentifier: advertised,
                publisherItemIdentifier: publisher, sourceIdentifier: source, timestamp: timestamp, impressionType: type,
                eligibleForReengagement: reengagement)
        }
    }
}

extension Interaction {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.key("type")
            writer.string(type.rawValue)
            writer.key("time")
            writer.signed(time)
            if let loadedAt {
                writer.key("loaded-at")
                writer.signed(loadedAt)
            }
            if let begin {
                writer.key("begin")
                writer.signed(begin)
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, end in
            try reader.key("type")
            let type = try reader.raw(InteractionType.self)
            try reader.key("time")
            let time: Milliseconds = try reader.signed()
            let loadedAt: Milliseconds? = try reader.optionalKey("loaded-at", end: end) ? try reader.signed() : nil
            let begin: Milliseconds? = try reader.optionalKey("begin", end: end) ? try reader.signed() : nil
            return Interaction(type: type, time: time, loadedAt: loadedAt, begin: begin)
        }
    }
}

extension WindowClosed {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.key("conversion-identifier")
            writer.string(conversionIdentifier)
            writer.key("window")
            writer.signed(window)
            writer.key("time")
            writer.signed(time)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, _ in
            try reader.key("conversion-identifier")
            let conversion = try reader.string()
            try reader.key("window")
            let window = try reader.signed(Int.self)
            try reader.key("time")
            return WindowClosed(conversionIdentifier: conversion, window: window, time: try reader.signed())
        }
    }
}
