/// The dispatcher signs a postback's payload as JSON and POSTs a JSON body, both with
/// `JSONCoding.encoder` (sorted keys, slashes unescaped); JSONEncoder was about a twentieth of its CPU
/// per delivery. These write the same bytes directly, the way the verifier's envelopes are written
/// (`Envelope+VerifiedImpressionJSON.swift`, whose byte writers they share): keys in sorted order, an
/// optional key left out when nil. Text JSONEncoder would escape (or non-ASCII text) returns nil, and
/// the caller uses JSONEncoder. `PostbackPlainJSONTests` compares the bytes with JSONEncoder's.
extension PostbackPayload {
    public func plainJSON() -> [UInt8]? {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(320)
        guard out.key("ad-network-identifier", first: true), out.string(adNetworkIdentifier.rawValue),
            out.key("advertised-item-identifier"), out.number(advertisedItemIdentifier),
            out.key("conversion-type"), out.string(conversionType.rawValue),
            out.key("did-win"), out.literal(didWin ? "true" : "false"),
            out.key("impression-type"), out.string(impressionType),
            marketplaceIdentifier.map({ out.key("marketplace-identifier") && out.string($0) }) ?? true,
            out.key("postback-identifier"), out.string(postbackIdentifier),
            out.key("postback-sequence-index"), out.number(postbackSequenceIndex),
            publisherItemIdentifier.map({ out.key("publisher-item-identifier") && out.number($0) }) ?? true,
            out.key("source-identifier"), out.string(sourceIdentifier),
            out.byte(UInt8(ascii: "}"))
        else { return nil }
        return out
    }
}

extension PostbackBody {
    public func plainJSON() -> [UInt8]? {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(jwsString.utf8.count + 160)
        guard out.key("ad-interaction-type", first: true), out.string(adInteractionType.rawValue),
            coarseConversionValue.map({ out.key("coarse-conversion-value") && out.string($0.rawValue) }) ?? true,
            conversionValue.map({ out.key("conversion-value") && out.number($0) }) ?? true,
            countryCode.map({ out.key("country-code") && out.string($0) }) ?? true,
            out.key("jws-string"), out.string(jwsString),
            out.byte(UInt8(ascii: "}"))
        else { return nil }
        return out
    }
}
