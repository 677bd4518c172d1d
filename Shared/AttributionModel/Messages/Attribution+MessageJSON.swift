/// attribution-winner's and the scheduler's messages (`attributions`, `scheduler:timers`) in the
/// message codec (see `MessageJSONReader`).
private typealias Reader = MessageJSONReader

extension AttributedImpression: MessageJSONCoded {
    func write(to w: inout MessageJSONWriter) {
        w.object { w in
            w.field("ad-network-identifier", adNetworkIdentifier.rawValue)
            w.field("impression-identifier", impressionIdentifier)
            w.field("interaction-type", interactionType)
            w.field("kind", kind)
            w.field("publisher-item-identifier", publisherItemIdentifier)
            w.field("source-identifier", sourceIdentifier)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var network: AdNetworkIdentifier?
        var impression: String?
        var interaction: InteractionType?
        var kind: ImpressionKind?
        var publisher: ItemIdentifier?
        var source: Int?
        try r.object { r, key in
            switch key {
            case "ad-network-identifier": try Reader.once(&network, r.adNetworkIdentifier())
            case "impression-identifier": try Reader.once(&impression, r.string())
            case "interaction-type": try Reader.once(&interaction, r.value())
            case "kind": try Reader.once(&kind, r.value())
            case "publisher-item-identifier": try Reader.once(&publisher, r.integer())
            case "source-identifier": try Reader.once(&source, r.integer())
            default: throw Reader.Unread()
            }
        }
        guard let network, let impression, let interaction, let kind, let publisher, let source else {
            throw Reader.Unread()
        }
        self.init(
            adNetworkIdentifier: network, impressionIdentifier: impression, sourceIdentifier: source,
            publisherItemIdentifier: publisher, interactionType: interaction, kind: kind)
    }
}

extension Attribution: MessageJSONCoded {
    func write(to w: inout MessageJSONWriter) {
        w.object { w in
            w.field("advertised-item-identifier", advertisedItemIdentifier)
            w.field("conversion-identifier", conversionIdentifier)
            w.field("conversion-tag", ifPresent: conversionTag)
            w.field("conversion-time", conversionTime)
            w.field("conversion-type", conversionType)
            w.field("country-code", ifPresent: countryCode)
            w.field("marketplace-identifier", ifPresent: marketplaceIdentifier)
            w.field("non-winners", nonWinners)
            w.field("winner", winner)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var item: ItemIdentifier?
        var conversion: String?
        var tag: String?
        var time: Milliseconds?
        var type: ConversionType?
        var country: String?
        var marketplace: String?
        var nonWinners: [AttributedImpression]?
        var winner: AttributedImpression?
        try r.object { r, key in
            switch key {
            case "advertised-item-identifier": try Reader.once(&item, r.integer())
            case "conversion-identifier": try Reader.once(&conversion, r.string())
            case "conversion-tag": try Reader.once(&tag, r.string())
            case "conversion-time": try Reader.once(&time, r.integer())
            case "conversion-type": try Reader.once(&type, r.conversionType())
            case "country-code": try Reader.once(&country, r.string())
            case "marketplace-identifier": try Reader.once(&marketplace, r.string())
            case "non-winners": try Reader.once(&nonWinners, r.array { try AttributedImpression(json: &$0) })
            case "winner": try Reader.once(&winner, AttributedImpression(json: &r))
            default: throw Reader.Unread()
            }
        }
        guard let item, let conversion, let time, let type, let nonWinners, let winner else { throw Reader.Unread() }
        self.init(
            conversionIdentifier: conversion, advertisedItemIdentifier: item, conversionType: type, conversionTime: time,
            countryCode: country, winner: winner, nonWinners: nonWinners, conversionTag: tag,
            marketplaceIdentifier: marketplace)
    }
}

extension AttributedUpdate: MessageJSONCoded {
    func write(to w: inout MessageJSONWriter) {
        w.object { w in
            w.field("conversion-identifier", conversionIdentifier)
            w.field("event-identifier", ifPresent: eventIdentifier)
            w.field("time", time)
            w.field("update", update)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var conversion: String?
        var event: String?
        var time: Milliseconds?
        var update: PostbackUpdate?
        try r.object { r, key in
            switch key {
            case "conversion-identifier": try Reader.once(&conversion, r.string())
            case "event-identifier": try Reader.once(&event, r.string())
            case "time": try Reader.once(&time, r.integer())
            case "update": try Reader.once(&update, PostbackUpdate(json: &r))
            default: throw Reader.Unread()
            }
        }
        guard let conversion, let time, let update else { throw Reader.Unread() }
        self.init(conversionIdentifier: conversion, update: update, time: time, eventIdentifier: event)
    }
}

extension ConversionSuperseded: MessageJSONCoded {
    func write(to w: inout MessageJSONWriter) {
        w.object { w in
            w.field("conversion-identifier", conversionIdentifier)
            w.field("superseded-by", supersededBy)
            w.field("time", time)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var conversion: String?
        var supersededBy: String?
        var time: Milliseconds?
        try r.object { r, key in
            switch key {
            case "conversion-identifier": try Reader.once(&conversion, r.string())
            case "superseded-by": try Reader.once(&supersededBy, r.string())
            case "time": try Reader.once(&time, r.integer())
            default: throw Reader.Unread()
            }
        }
        guard let conversion, let supersededBy, let time else { throw Reader.Unread() }
        self.init(conversionIdentifier: conversion, supersededBy: supersededBy, time: time)
    }
}

extension WindowClosed: MessageJSONCoded {
    func write(to w: inout MessageJSONWriter) {
        w.object { w in
            w.field("conversion-identifier", conversionIdentifier)
            w.field("time", time)
            w.field("window", window)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var conversion: String?
        var time: Milliseconds?
        var window: Int?
        try r.object { r, key in
            switch key {
            case "conversion-identifier": try Reader.once(&conversion, r.string())
            case "time": try Reader.once(&time, r.integer())
            case "window": try Reader.once(&window, r.integer())
            default: throw Reader.Unread()
            }
        }
        guard let conversion, let time, let window else { throw Reader.Unread() }
        self.init(conversionIdentifier: conversion, window: window, time: time)
    }
}
