/// A device's attribution state in its hand-written compact form (`CompactHandCoded`):
/// attribution-winner reads and writes it on every event of the device. The writer mirrors the
/// synthesized `encode(to:)` (every array, even empty; `installedAt` and `installCountry` only when set).
extension DeviceAttributionState: CompactHandCoded {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.key("impressions")
            writer.array(impressions) { writer, impression in impression.write(to: &writer) }
            writer.key("conversions")
            writer.array(conversions) { writer, record in record.write(to: &writer) }
            writer.key("pendingUpdates")
            writer.array(pendingUpdates) { writer, update in update.write(to: &writer) }
            writer.field("installedAt", ifPresent: installedAt)
            writer.field("installCountry", ifPresent: installCountry)
            writer.key("settling")
            writer.array(settling) { writer, record in record.write(to: &writer) }
            writer.key("pendingActivities")
            writer.array(pendingActivities) { writer, activity in activity.write(to: &writer) }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            var state = DeviceAttributionState()
            try reader.key("impressions")
            state.impressions = try reader.array { try VerifiedImpression(reading: &$0) }
            try reader.key("conversions")
            state.conversions = try reader.array { try ConversionRecord(reading: &$0) }
            try reader.key("pendingUpdates")
            state.pendingUpdates = try reader.array { try ValueUpdateReport(reading: &$0) }
            state.installedAt = try reader.signed(ifPresent: "installedAt")
            state.installCountry = try reader.string(ifPresent: "installCountry")
            try reader.key("settling")
            state.settling = try reader.array { try ConversionRecord(reading: &$0) }
            try reader.key("pendingActivities")
            state.pendingActivities = try reader.array { try ActivityReport(reading: &$0) }
            return state
        }
    }
}

extension ConversionRecord {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("conversionIdentifier", conversionIdentifier)
            writer.field("conversionType", conversionType)
            writer.field("time", time)
            writer.field("conversionTag", ifPresent: conversionTag)
            writer.field("settlesAfter", ifPresent: settlesAfter)
            writer.field("heldByVerifier", ifPresent: heldByVerifier)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            ConversionRecord(
                conversionIdentifier: try reader.string("conversionIdentifier"),
                conversionType: try reader.raw("conversionType", as: ConversionType.self), time: try reader.signed("time"),
                conversionTag: try reader.string(ifPresent: "conversionTag"),
                settlesAfter: try reader.signed(ifPresent: "settlesAfter"),
                heldByVerifier: try reader.bool(ifPresent: "heldByVerifier"))
        }
    }
}
