/// The reports on `events` (and the updates on `verified`) in the message codec: each type's keys in
/// JSONEncoder's sorted order, read back only in that form (see `MessageJSONReader`).
private typealias Reader = MessageJSONReader

extension Interaction: MessageJSONCoded {
    func write(to w: inout MessageJSONWriter) {
        w.object { w in
            w.field("begin", ifPresent: begin)
            w.field("loaded-at", ifPresent: loadedAt)
            w.field("time", time)
            w.field("type", type)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var begin: Milliseconds?
        var loadedAt: Milliseconds?
        var time: Milliseconds?
        var type: InteractionType?
        try r.object { r, key in
            switch key {
            case "begin": try Reader.once(&begin, r.integer())
            case "loaded-at": try Reader.once(&loadedAt, r.integer())
            case "time": try Reader.once(&time, r.integer())
            case "type": try Reader.once(&type, r.value())
            default: throw Reader.Unread()
            }
        }
        guard let time, let type else { throw Reader.Unread() }
        self.init(type: type, time: time, loadedAt: loadedAt, begin: begin)
    }
}

extension ImpressionReport: MessageJSONCoded {
    /// AdAttributionKit's reports; a SKAdNetwork impression is left to JSONEncoder.
    func write(to w: inout MessageJSONWriter) {
        guard let impression, skadnetworkImpression == nil else {
            w.failed = true
            return
        }
        w.object { w in
            w.field("device-identifier", deviceIdentifier)
            w.field("impression", impression)
            w.field("interaction", interaction)
            w.field("received-at", receivedAt)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var device: String?
        var impression: String?
        var interaction: Interaction?
        var receivedAt: Milliseconds?
        try r.object { r, key in
            switch key {
            case "device-identifier": try Reader.once(&device, r.string())
            case "impression": try Reader.once(&impression, r.string())
            case "interaction": try Reader.once(&interaction, Interaction(json: &r))
            case "received-at": try Reader.once(&receivedAt, r.integer())
            default: throw Reader.Unread()
            }
        }
        guard let device, let impression, let interaction, let receivedAt else { throw Reader.Unread() }
        self.init(deviceIdentifier: device, impression: impression, interaction: interaction, receivedAt: receivedAt)
    }
}

extension ConversionReport: MessageJSONCoded {
    func write(to w: inout MessageJSONWriter) {
        w.object { w in
            w.field("advertised-item-identifier", advertisedItemIdentifier)
            w.field("conversion-tag", ifPresent: conversionTag)
            w.field("conversion-type", conversionType)
            w.field("country-code", ifPresent: countryCode)
            w.field("device-identifier", deviceIdentifier)
            w.field("marketplace-identifier", ifPresent: marketplaceIdentifier)
            w.field("received-at", receivedAt)
            w.field("time", time)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var item: ItemIdentifier?
        var tag: String?
        var type: ConversionType?
        var country: String?
        var device: String?
        var marketplace: String?
        var receivedAt: Milliseconds?
        var time: Milliseconds?
        try r.object { r, key in
            switch key {
            case "advertised-item-identifier": try Reader.once(&item, r.integer())
            case "conversion-tag": try Reader.once(&tag, r.string())
            case "conversion-type": try Reader.once(&type, r.conversionType())
            case "country-code": try Reader.once(&country, r.string())
            case "device-identifier": try Reader.once(&device, r.string())
            case "marketplace-identifier": try Reader.once(&marketplace, r.string())
            case "received-at": try Reader.once(&receivedAt, r.integer())
            case "time": try Reader.once(&time, r.integer())
            default: throw Reader.Unread()
            }
        }
        guard let item, let type, let device, let receivedAt, let time else { throw Reader.Unread() }
        self.init(
            deviceIdentifier: device, advertisedItemIdentifier: item, conversionType: type, time: time,
            countryCode: country, receivedAt: receivedAt, conversionTag: tag, marketplaceIdentifier: marketplace)
    }
}

extension ValueUpdateReport: MessageJSONCoded {
    func write(to w: inout MessageJSONWriter) {
        w.object { w in
            w.field("advertised-item-identifier", advertisedItemIdentifier)
            w.field("device-identifier", deviceIdentifier)
            w.field("event-identifier", ifPresent: eventIdentifier)
            w.field("received-at", receivedAt)
            w.field("skadnetwork-shape", ifPresent: skadnetworkShape)
            w.field("time", time)
            w.field("update", update)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var item: ItemIdentifier?
        var device: String?
        var event: String?
        var receivedAt: Milliseconds?
        var shape: Bool?
        var time: Milliseconds?
        var update: PostbackUpdate?
        try r.object { r, key in
            switch key {
            case "advertised-item-identifier": try Reader.once(&item, r.integer())
            case "device-identifier": try Reader.once(&device, r.string())
            case "event-identifier": try Reader.once(&event, r.string())
            case "received-at": try Reader.once(&receivedAt, r.integer())
            case "skadnetwork-shape": try Reader.once(&shape, r.bool())
            case "time": try Reader.once(&time, r.integer())
            case "update": try Reader.once(&update, PostbackUpdate(json: &r))
            default: throw Reader.Unread()
            }
        }
        guard let item, let device, let receivedAt, let time, let update else { throw Reader.Unread() }
        self.init(
            deviceIdentifier: device, advertisedItemIdentifier: item, update: update, time: time, receivedAt: receivedAt,
            skadnetworkShape: shape)
        eventIdentifier = event
    }
}

extension PostbackUpdate: MessageJSONCoded {
    /// The members `Codable` writes (AdAttributionKit's spelling); the reader takes that spelling only,
    /// and leaves SKAdNetwork's and the echoed `conversion-tag` to `init(from:)`.
    func write(to w: inout MessageJSONWriter) {
        w.object { w in
            w.field("coarseConversionValue", ifPresent: coarseConversionValue)
            w.field("conversionTag", ifPresent: conversionTag)
            if let conversionTypes {
                w.key("conversionTypes")
                w.bytes.append(UInt8(ascii: "["))
                for (index, kind) in conversionTypes.enumerated() {
                    if index > 0 { w.bytes.append(UInt8(ascii: ",")) }
                    w.string(kind.rawValue)
                }
                w.bytes.append(UInt8(ascii: "]"))
            }
            w.field("fineConversionValue", fineConversionValue)
            w.field("lockPostback", lockPostback)
        }
    }

    init(json r: inout MessageJSONReader) throws {
        var coarse: CoarseConversionValue?
        var tag: String?
        var kinds: [ConversionKind]?
        var fine: Int?
        var lock: Bool?
        try r.object { r, key in
            switch key {
            case "coarseConversionValue": try Reader.once(&coarse, r.value())
            case "conversionTag": try Reader.once(&tag, r.string())
            case "conversionTypes": try Reader.once(&kinds, r.array { try $0.value(ConversionKind.self) })
            case "fineConversionValue": try Reader.once(&fine, r.integer())
            case "lockPostback": try Reader.once(&lock, r.bool())
            default: throw Reader.Unread()
            }
        }
        guard let fine else { throw Reader.Unread() }
        self.init(
            fineConversionValue: fine, coarseConversionValue: coarse, lockPostback: lock ?? false, conversionTypes: kinds,
            conversionTag: tag)
    }
}

extension MessageJSONReader {
    /// A conversion type as `ConversionType.init(from:)` reads it (both spellings of re-engagement).
    mutating func conversionType() throws -> ConversionType {
        guard let type = ConversionType(spelling: try string()) else { throw Unread() }
        return type
    }
}
