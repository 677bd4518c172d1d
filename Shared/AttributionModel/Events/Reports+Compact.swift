/// Hand-written compact forms (`CompactHandCoded`) of the conversion and value-update bodies each
/// campaign event carries through the stages, mirroring their synthesized `encode(to:)`.
extension ConversionReport {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.key("device-identifier")
            writer.string(deviceIdentifier)
            writer.key("advertised-item-identifier")
            writer.unsigned(advertisedItemIdentifier)
            writer.key("conversion-type")
            writer.string(conversionType.rawValue)
            writer.key("time")
            writer.signed(time)
            if let countryCode {
                writer.key("country-code")
                writer.string(countryCode)
            }
            writer.key("received-at")
            writer.signed(receivedAt)
            if let conversionTag {
                writer.key("conversion-tag")
                writer.string(conversionTag)
            }
            if let marketplaceIdentifier {
                writer.key("marketplace-identifier")
                writer.string(marketplaceIdentifier)
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, end in
            try reader.key("device-identifier")
            let device = try reader.string()
            try reader.key("advertised-item-identifier")
            let advertised = try reader.unsigned()
            try reader.key("conversion-type")
            let type = try reader.raw(ConversionType.self)
            try reader.key("time")
            let time: Milliseconds = try reader.signed()
            let country = try reader.optionalKey("country-code", end: end) ? try reader.string() : nil
            try reader.key("received-at")
            let receivedAt: Milliseconds = try reader.signed()
            let tag = try reader.optionalKey("conversion-tag", end: end) ? try reader.string() : nil
            let marketplace = try reader.optionalKey("marketplace-identifier", end: end) ? try reader.string() : nil
            return ConversionReport(
                deviceIdentifier: device, advertisedItemIdentifier: advertised, conversionType: type, time: time,
                countryCode: country, receivedAt: receivedAt, conversionTag: tag, marketplaceIdentifier: marketplace)
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
        self = try reader.keyed { reader, _ in
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
            writer.key("device-identifier")
            writer.string(deviceIdentifier)
            writer.key("advertised-item-identifier")
            writer.unsigned(advertisedItemIdentifier)
            writer.key("update")
            try update.write(to: &writer)
            writer.key("time")
            writer.signed(time)
            writer.key("received-at")
            writer.signed(receivedAt)
            if let eventIdentifier {
                writer.key("event-identifier")
                writer.string(eventIdentifier)
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, end in
            try reader.key("device-identifier")
            let device = try reader.string()
            try reader.key("advertised-item-identifier")
            let advertised = try reader.unsigned()
            try reader.key("update")
            let update = try PostbackUpdate(reading: &reader)
            try reader.key("time")
            let time: Milliseconds = try reader.signed()
            try reader.key("received-at")
            var report = ValueUpdateReport(
                deviceIdentifier: device, advertisedItemIdentifier: advertised, update: update, time: time,
                receivedAt: try reader.signed())
            if try reader.optionalKey("event-identifier", end: end) { report.eventIdentifier = try reader.string() }
            return report
        }
    }
}

extension AttributedUpdate {
    func write(to writer: inout CompactWriter) throws {
        try writer.keyed { writer in
            writer.key("conversion-identifier")
            writer.string(conversionIdentifier)
            writer.key("update")
            try update.write(to: &writer)
            writer.key("time")
            writer.signed(time)
            if let eventIdentifier {
                writer.key("event-identifier")
                writer.string(eventIdentifier)
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, end in
            try reader.key("conversion-identifier")
            let conversion = try reader.string()
            try reader.key("update")
            let update = try PostbackUpdate(reading: &reader)
            try reader.key("time")
            let time: Milliseconds = try reader.signed()
            let event = try reader.optionalKey("event-identifier", end: end) ? try reader.string() : nil
            return AttributedUpdate(conversionIdentifier: conversion, update: update, time: time, eventIdentifier: event)
        }
    }
}

extension PostbackUpdate {
    func write(to writer: inout CompactWriter) throws {
        try writer.keyed { writer in
            writer.key("fineConversionValue")
            writer.signed(fineConversionValue)
            if let coarseConversionValue {
                writer.key("coarseConversionValue")
                writer.string(coarseConversionValue.rawValue)
            }
            writer.key("lockPostback")
            writer.bool(lockPostback)
            if let conversionTypes {
                writer.key("conversionTypes")
                try writer.encodable(conversionTypes)
            }
            if let conversionTag {
                writer.key("conversionTag")
                writer.string(conversionTag)
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, end in
            try reader.key("fineConversionValue")
            var update = PostbackUpdate(fineConversionValue: try reader.signed(Int.self))
            if try reader.optionalKey("coarseConversionValue", end: end) {
                update.coarseConversionValue = try reader.raw(CoarseConversionValue.self)
            }
            try reader.key("lockPostback")
            update.lockPostback = try reader.bool()
            if try reader.optionalKey("conversionTypes", end: end) {
                update.conversionTypes = try reader.decodable([ConversionKind].self)
            }
            if try reader.optionalKey("conversionTag", end: end) { update.conversionTag = try reader.string() }
            return update
        }
    }
}
