import Foundation

/// A pending update's stored form, part of a device's attribution state (an update that arrived before
/// its conversion was attributed): written as its `Codable` form is, read in any key order (rare, so
/// tolerance costs nothing).
extension ValueUpdateReport {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("device-identifier", deviceIdentifier)
            writer.field("advertised-item-identifier", advertisedItemIdentifier)
            writer.key("update")
            update.write(to: &writer)
            writer.field("time", time)
            writer.field("received-at", receivedAt)
            writer.field("event-identifier", ifPresent: eventIdentifier)
            writer.field("skadnetwork-shape", ifPresent: skadnetworkShape)
        }
    }

    init(reading reader: inout CompactReader) throws {
        var device: String?
        var item: ItemIdentifier?
        var update: PostbackUpdate?
        var time: Milliseconds?
        var receivedAt: Milliseconds?
        var event: String?
        var shape: Bool?
        try reader.entries { reader, key in
            switch key {
            case "device-identifier": device = try reader.string()
            case "advertised-item-identifier": item = try reader.unsigned()
            case "update": update = try PostbackUpdate(reading: &reader)
            case "time": time = try reader.signed()
            case "received-at": receivedAt = try reader.signed()
            case "event-identifier": event = try reader.string()
            case "skadnetwork-shape": shape = try reader.bool()
            default: throw CompactReader.Mismatch()
            }
        }
        guard let device, let item, let update, let time, let receivedAt else { throw CompactReader.Mismatch() }
        self.init(
            deviceIdentifier: device, advertisedItemIdentifier: item, update: update, time: time, receivedAt: receivedAt,
            skadnetworkShape: shape)
        eventIdentifier = event
    }
}

extension PostbackUpdate {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("fineConversionValue", fineConversionValue)
            writer.field("coarseConversionValue", ifPresent: coarseConversionValue)
            writer.field("lockPostback", lockPostback)
            if let conversionTypes {
                writer.key("conversionTypes")
                writer.array(conversionTypes) { writer, kind in writer.string(kind.rawValue) }
            }
            writer.field("conversionTag", ifPresent: conversionTag)
        }
    }

    init(reading reader: inout CompactReader) throws {
        var fine: Int?
        var coarse: CoarseConversionValue?
        var lock: Bool?
        var kinds: [ConversionKind]?
        var tag: String?
        try reader.entries { reader, key in
            switch key {
            case "fineConversionValue": fine = try reader.signed(Int.self)
            case "coarseConversionValue": coarse = try reader.raw(CoarseConversionValue.self)
            case "lockPostback": lock = try reader.bool()
            case "conversionTypes": kinds = try reader.array { try $0.raw(ConversionKind.self) }
            case "conversionTag": tag = try reader.string()
            default: throw CompactReader.Mismatch()
            }
        }
        guard let fine, let lock else { throw CompactReader.Mismatch() }
        self.init(
            fineConversionValue: fine, coarseConversionValue: coarse, lockPostback: lock, conversionTypes: kinds,
            conversionTag: tag)
    }
}
