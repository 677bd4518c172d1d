/// A device's attribution state in its hand-written compact form (`CompactHandCoded`):
/// attribution-winner reads and writes it on every event of the device. The writer mirrors the
/// synthesized `encode(to:)` (every array, even empty; `installedAt` only when set). Pending updates
/// and activities, rare, keep their `Codable` form inside the same bytes.
extension DeviceAttributionState: CompactHandCoded {
    func write(to writer: inout CompactWriter) throws {
        try writer.keyed { writer in
            writer.key("impressions")
            writer.array(impressions) { writer, impression in impression.write(to: &writer) }
            writer.key("conversions")
            writer.array(conversions) { writer, record in record.write(to: &writer) }
            writer.key("pendingUpdates")
            try writer.encodable(pendingUpdates)
            if let installedAt {
                writer.key("installedAt")
                writer.signed(installedAt)
            }
            writer.key("settling")
            writer.array(settling) { writer, record in record.write(to: &writer) }
            writer.key("pendingActivities")
            try writer.encodable(pendingActivities)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, end in
            var state = DeviceAttributionState()
            try reader.key("impressions")
            state.impressions = try reader.array { try VerifiedImpression(reading: &$0) }
            try reader.key("conversions")
            state.conversions = try reader.array { try ConversionRecord(reading: &$0) }
            try reader.key("pendingUpdates")
            state.pendingUpdates = try reader.decodable([ValueUpdateReport].self)
            if try reader.optionalKey("installedAt", end: end) { state.installedAt = try reader.signed() }
            try reader.key("settling")
            state.settling = try reader.array { try ConversionRecord(reading: &$0) }
            try reader.key("pendingActivities")
            state.pendingActivities = try reader.decodable([ActivityReport].self)
            return state
        }
    }
}

extension ConversionRecord {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.key("conversionIdentifier")
            writer.string(conversionIdentifier)
            writer.key("conversionType")
            writer.string(conversionType.rawValue)
            writer.key("time")
            writer.signed(time)
            if let conversionTag {
                writer.key("conversionTag")
                writer.string(conversionTag)
            }
            if let settlesAfter {
                writer.key("settlesAfter")
                writer.signed(settlesAfter)
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, end in
            try reader.key("conversionIdentifier")
            let conversion = try reader.string()
            try reader.key("conversionType")
            let type = try reader.raw(ConversionType.self)
            try reader.key("time")
            let time: Milliseconds = try reader.signed()
            let tag = try reader.optionalKey("conversionTag", end: end) ? try reader.string() : nil
            let settlesAfter: Milliseconds? = try reader.optionalKey("settlesAfter", end: end) ? try reader.signed() : nil
            return ConversionRecord(
                conversionIdentifier: conversion, conversionType: type, time: time, conversionTag: tag, settlesAfter: settlesAfter
            )
        }
    }
}
