/// The scheduler's `postback.due` orders in the message codec (see `MessageJSONReader`).
private typealias Reader = MessageJSONReader

extension PostbackPayload: MessageJSONCoded {
    func write(to w: inout MessageJSONWriter) {
        w.object { w in
            w.field("ad-network-identifier", adNetworkIdentifier.rawValue)
            w.field("advertised-item-identifier", advertisedItemIdentifier)
            w.field("conversion-type", conversionType)
            w.field("did-win", didWin)
            w.field("impression-type", impressionType)
            w.field("marketplace-identifier", ifPresent: marketplaceIdentifier)
            w.field("postback-identifier", postbackIdentifier)
            w.field("postback-sequence-index", postbackSequenceIndex)
            w.field("publisher-item-identifier", ifPresent: publisherItemIdentifier)
            w.field("source-identifier", sourceIdentifier)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var network: AdNetworkIdentifier?
        var advertised: ItemIdentifier?
        var type: ConversionType?
        var didWin: Bool?
        var impressionType: String?
        var marketplace: String?
        var postback: String?
        var sequenceIndex: Int?
        var publisher: ItemIdentifier?
        var source: String?
        try r.object { r, key in
            switch key {
            case "ad-network-identifier": try Reader.once(&network, r.adNetworkIdentifier())
            case "advertised-item-identifier": try Reader.once(&advertised, r.integer())
            case "conversion-type": try Reader.once(&type, r.conversionType())
            case "did-win": try Reader.once(&didWin, r.bool())
            case "impression-type": try Reader.once(&impressionType, r.string())
            case "marketplace-identifier": try Reader.once(&marketplace, r.string())
            case "postback-identifier": try Reader.once(&postback, r.string())
            case "postback-sequence-index": try Reader.once(&sequenceIndex, r.integer())
            case "publisher-item-identifier": try Reader.once(&publisher, r.integer())
            case "source-identifier": try Reader.once(&source, r.string())
            default: throw Reader.Unread()
            }
        }
        guard let network, let advertised, let type, let didWin, let impressionType, let postback, let sequenceIndex,
            let source
        else { throw Reader.Unread() }
        self.init(
            impressionType: impressionType, adNetworkIdentifier: network, sourceIdentifier: source,
            advertisedItemIdentifier: advertised, publisherItemIdentifier: publisher, conversionType: type,
            marketplaceIdentifier: marketplace, postbackIdentifier: postback, postbackSequenceIndex: sequenceIndex,
            didWin: didWin)
    }
}

extension PostbackOrder: MessageJSONCoded {
    func write(to w: inout MessageJSONWriter) {
        w.object { w in
            w.field("ad-interaction-type", adInteractionType)
            w.field("coarse-conversion-value", ifPresent: coarseConversionValue)
            w.field("conversion-value", ifPresent: conversionValue)
            w.field("country-code", ifPresent: countryCode)
            w.field("development", isDevelopment)
            w.field("impression-kind", ifPresent: impressionKind)
            w.field("payload", payload)
            w.field("test-postback", ifPresent: isTestPostback)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var interaction: InteractionType?
        var coarse: CoarseConversionValue?
        var value: Int?
        var country: String?
        var development: Bool?
        var kind: ImpressionKind?
        var payload: PostbackPayload?
        var test: Bool?
        try r.object { r, key in
            switch key {
            case "ad-interaction-type": try Reader.once(&interaction, r.value())
            case "coarse-conversion-value": try Reader.once(&coarse, r.value())
            case "conversion-value": try Reader.once(&value, r.integer())
            case "country-code": try Reader.once(&country, r.string())
            case "development": try Reader.once(&development, r.bool())
            case "impression-kind": try Reader.once(&kind, r.value())
            case "payload": try Reader.once(&payload, PostbackPayload(json: &r))
            case "test-postback": try Reader.once(&test, r.bool())
            default: throw Reader.Unread()
            }
        }
        guard let interaction, let development, let payload else { throw Reader.Unread() }
        self.init(
            payload: payload, adInteractionType: interaction, conversionValue: value, coarseConversionValue: coarse,
            countryCode: country, isDevelopment: development)
        // The initialiser's defaults are not the decoder's: absent stays absent.
        impressionKind = kind
        isTestPostback = test
    }
}
