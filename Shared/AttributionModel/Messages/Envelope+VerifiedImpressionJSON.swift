/// The verifier writes an `impression.verified` envelope for every impression it accepts, and
/// JSONEncoder (a tree of boxed values, then sorted keys) was about an eighth of its CPU, as much as a
/// third of the signature check. This writes the same bytes directly: the same keys in the same
/// sorted order, the same number and string forms, so nothing downstream can tell (no new format,
/// no version marker; `EnvelopeVerifiedJSONTests` compares the bytes with JSONEncoder's).
///
/// Only plain text takes this path: every string printable ASCII without `"` or `\` (ids always are);
/// anything that would need escaping returns nil and the caller uses JSONEncoder.
extension Envelope {
    public static func verifiedImpressionJSON(_ envelope: Envelope, _ impression: VerifiedImpression) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        out.append(UInt8(ascii: "{"))
        let payload = impression.payload
        // Keys in JSONEncoder's `.sortedKeys` order.
        guard out.key("body", first: true), out.byte(UInt8(ascii: "{")),
            out.key("device-identifier", first: true), out.string(impression.deviceIdentifier),
            out.key("interaction"), out.interaction(impression.interaction),
            out.key("kind"), out.string(impression.kind.rawValue),
            out.key("payload"), out.byte(UInt8(ascii: "{")),
            out.key("ad-network-identifier", first: true), out.string(payload.adNetworkIdentifier.rawValue),
            out.key("advertised-item-identifier"), out.number(payload.advertisedItemIdentifier),
            payload.eligibleForReengagement.map({ out.key("eligible-for-re-engagement") && out.literal($0 ? "true" : "false") })
                ?? true,
            out.key("impression-identifier"), out.string(payload.impressionIdentifier),
            out.key("impression-type"), out.string(payload.impressionType),
            out.key("publisher-item-identifier"), out.number(payload.publisherItemIdentifier),
            out.key("source-identifier"), out.number(payload.sourceIdentifier),
            out.key("timestamp"), out.number(payload.timestamp), out.byte(UInt8(ascii: "}")),
            out.byte(UInt8(ascii: "}")),
            out.envelopeFields(envelope)
        else { return nil }
        return out
    }
}

extension Envelope {
    /// ingest's `impression.reported` envelope (an AdAttributionKit JWS report), written the same way
    /// and for the same reason: JSONEncoder was a quarter of ingest's CPU per batched event. Reports
    /// of SKAdNetwork impressions, and any text that would need escaping, return nil (JSONEncoder).
    public static func reportedImpressionJSON(_ envelope: Envelope, _ report: ImpressionReport) -> [UInt8]? {
        guard let jws = report.impression, report.skadnetworkImpression == nil else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(256 + jws.utf8.count)
        out.append(UInt8(ascii: "{"))
        // Keys in JSONEncoder's `.sortedKeys` order.
        guard out.key("body", first: true), out.byte(UInt8(ascii: "{")),
            out.key("device-identifier", first: true), out.string(report.deviceIdentifier),
            out.key("impression"), out.string(jws),
            out.key("interaction"), out.interaction(report.interaction),
            out.key("received-at"), out.number(report.receivedAt),
            out.byte(UInt8(ascii: "}")),
            out.envelopeFields(envelope)
        else { return nil }
        return out
    }
}

/// The byte writers of plain JSON, shared with the dispatcher's postback JSON (`Postback+PlainJSON.swift`).
extension [UInt8] {
    /// `"key":`, preceded by a comma unless it is the first key of its object. Keys are plain.
    mutating func key(_ key: StaticString, first: Bool = false) -> Bool {
        if !first { append(UInt8(ascii: ",")) }
        append(UInt8(ascii: "\""))
        key.withUTF8Buffer { append(contentsOf: $0) }
        append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        return true
    }

    /// The envelope's own fields after its body, and the closing brace.
    fileprivate mutating func envelopeFields(_ envelope: Envelope) -> Bool {
        key("id") && string(envelope.id) && key("schema") && number(envelope.schema) && key("time")
            && number(envelope.time) && key("type") && string(envelope.type.rawValue) && byte(UInt8(ascii: "}"))
    }

    /// An `Interaction` object, keys sorted.
    fileprivate mutating func interaction(_ interaction: Interaction) -> Bool {
        byte(UInt8(ascii: "{"))
            && (interaction.begin.map({ key("begin", first: true) && number($0) }) ?? true)
            && (interaction.loadedAt.map({ key("loaded-at", first: interaction.begin == nil) && number($0) }) ?? true)
            && key("time", first: interaction.begin == nil && interaction.loadedAt == nil) && number(interaction.time)
            && key("type") && string(interaction.type.rawValue) && byte(UInt8(ascii: "}"))
    }

    mutating func byte(_ byte: UInt8) -> Bool {
        append(byte)
        return true
    }

    mutating func literal(_ text: StaticString) -> Bool {
        text.withUTF8Buffer { append(contentsOf: $0) }
        return true
    }

    mutating func number(_ value: some BinaryInteger) -> Bool {
        append(contentsOf: String(value).utf8)
        return true
    }

    /// A quoted string, or false when it holds anything JSONEncoder would escape or that is not ASCII.
    mutating func string(_ text: String) -> Bool {
        append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else { return false }
            append(byte)
        }
        append(UInt8(ascii: "\""))
        return true
    }
}
