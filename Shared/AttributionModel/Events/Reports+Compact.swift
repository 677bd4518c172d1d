/// Hand-written compact forms (`CompactHandCoded`) of the conversion and value-update bodies each
/// campaign event carries through the stages, mirroring their synthesized `encode(to:)`.
extension ConversionReport {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("device-identifier", deviceIdentifier)
            writer.field("advertised-item-identifier", advertisedItemIdentifier)
            writer.field("conversion-type", conversionType)
            writer.field("time", time)
            writer.field("country-code", ifPresent: countryCode)
            writer.field("received-at", receivedAt)
            writer.field("conversion-tag", ifPresent: conversionTag)
            writer.field("marketplace-identifier", ifPresent: marketplaceIdentifier)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            ConversionReport(
                deviceIdentifier: try reader.string("device-identifier"),
                advertisedItemIdentifier: try reader.unsigned("advertised-item-identifier"),
                conversionType: try reader.raw("conversion-type", as: ConversionType.self), time: try reader.signed("time"),
                countryCode: try reader.string(ifPresent: "country-code"), receivedAt: try reader.signed("received-at"),
                conversionTag: try reader.string(ifPresent: "conversion-tag"),
                marketplaceIdentifier: try reader.string(ifPresent: "marketplace-identifier"))
        }
    }
}

extension VerifiedConversion {
    /// The report by hand; the app's configuration (attribution windows per network) through `Codable`.
    func write(to writer: inout CompactWriter) throws {
        try writer.keyed { writer in
            writer.key("report")
            report.write(to: &writer)
            writer.key("app")
            try writer.encodable(app)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            try reader.key("report")
            let report = try ConversionReport(reading: &reader)
            try reader.key("app")
            return VerifiedConversion(report: report, app: try reader.decodable(AdvertisedAppConfiguration.self))
        }
    }
}

extension ValueUpdateReport {
    func write(to writer: inout CompactWriter) throws {
        try writer.keyed { writer in
            writer.field("device-identifier", deviceIdentifier)
            writer.field("advertised-item-identifier", advertisedItemIdentifier)
            writer.key("update")
            try update.write(to: &writer)
            writer.field("time", time)
            writer.field("received-at", receivedAt)
            writer.field("event-identifier", ifPresent: eventIdentifier)
            writer.field("skadnetwork-shape", ifPresent: skadnetworkShape)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            let device = try reader.string("device-identifier")
            let advertised = try reader.unsigned("advertised-item-identifier")
            try reader.key("update")
            let update = try PostbackUpdate(reading: &reader)
            var report = ValueUpdateReport(
                deviceIdentifier: device, advertisedItemIdentifier: advertised, update: update, time: try reader.signed("time"),
                receivedAt: try reader.signed("received-at"))
            report.eventIdentifier = try reader.string(ifPresent: "event-identifier")
            report.skadnetworkShape = try reader.bool(ifPresent: "skadnetwork-shape")
            return report
        }
    }
}

extension AttributedUpdate {
    func write(to writer: inout CompactWriter) throws {
        try writer.keyed { writer in
            writer.field("conversion-identifier", conversionIdentifier)
            writer.key("update")
            try update.write(to: &writer)
            writer.field("time", time)
            writer.field("event-identifier", ifPresent: eventIdentifier)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            let conversion = try reader.string("conversion-identifier")
            try reader.key("update")
            return AttributedUpdate(
                conversionIdentifier: conversion, update: try PostbackUpdate(reading: &reader), time: try reader.signed("time"),
                eventIdentifier: try reader.string(ifPresent: "event-identifier"))
        }
    }
}

extension PostbackUpdate {
    func write(to writer: inout CompactWriter) throws {
        try writer.keyed { writer in
            writer.field("fineConversionValue", fineConversionValue)
            writer.field("coarseConversionValue", ifPresent: coarseConversionValue)
            writer.field("lockPostback", lockPostback)
            if let conversionTypes {
                writer.key("conversionTypes")
                try writer.encodable(conversionTypes)
            }
            writer.field("conversionTag", ifPresent: conversionTag)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            let fine = try reader.signed("fineConversionValue", as: Int.self)
            let coarse = try reader.raw(ifPresent: "coarseConversionValue", as: CoarseConversionValue.self)
            let lock = try reader.bool("lockPostback")
            let types = try reader.optionalKey("conversionTypes") ? try reader.decodable([ConversionKind].self) : nil
            return PostbackUpdate(
                fineConversionValue: fine, coarseConversionValue: coarse, lockPostback: lock, conversionTypes: types,
                conversionTag: try reader.string(ifPresent: "conversionTag"))
        }
    }
}
