/// The postback plan's hand-written compact form (`CompactHandCoded`): the scheduler reads and writes
/// a plan on every message of its conversion. Each writer mirrors its type's `encode(to:)` (its own or
/// the synthesized one: same keys, same order, optional keys left out when nil); the readers read that
/// order back. The conversion-value schema and the activity totals (present only for apps with a
/// schema) keep their `Codable` form inside the same bytes.
extension PostbackPlan: CompactHandCoded {
    func write(to writer: inout CompactWriter) throws {
        try writer.keyed { writer in
            writer.key("attribution")
            attribution.write(to: &writer)
            writer.key("crowd")
            crowd.write(to: &writer)
            if let firstUpdateAt {
                writer.key("firstUpdateAt")
                writer.signed(firstUpdateAt)
            }
            writer.key("reported")
            writer.array(reported) { writer, value in value.write(to: &writer) }
            writer.key("windowsDone")
            writer.array(windowsDone) { writer, done in writer.bool(done) }
            if closed.contains(where: { $0 != nil }) {
                writer.key("closed")
                writer.array(closed) { writer, window in
                    if let window { window.write(to: &writer) } else { writer.null() }
                }
            }
            if let valueSchema {
                writer.key("valueSchema")
                try writer.encodable(valueSchema)
                writer.key("activityTotals")
                try writer.encodable(activityTotals)
                writer.key("schemaValues")
                try writer.encodable(schemaValues)
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, end in
            try reader.key("attribution")
            let attribution = try Attribution(reading: &reader)
            try reader.key("crowd")
            let crowd = try CrowdAssessment(reading: &reader)
            var plan = PostbackPlan(attribution: attribution, crowd: crowd)
            // `init(attribution:crowd:)` gives a development winner the development crowd; the stored one counts.
            plan.crowd = crowd
            if try reader.optionalKey("firstUpdateAt", end: end) { plan.firstUpdateAt = try reader.signed() }
            try reader.key("reported")
            plan.reported = try reader.array { try ReportedValue(reading: &$0) }
            try reader.key("windowsDone")
            plan.windowsDone = try reader.array { try $0.bool() }
            if try reader.optionalKey("closed", end: end) {
                plan.closed = try reader.array { reader in reader.null() ? nil : try ClosedWindow(reading: &reader) }
            }
            if try reader.optionalKey("valueSchema", end: end) {
                plan.valueSchema = try reader.decodable(ConversionValueSchema.self)
                try reader.key("activityTotals")
                plan.activityTotals = try reader.decodable([ActivityTotals].self)
                try reader.key("schemaValues")
                plan.schemaValues = try reader.decodable([SchemaValue?].self)
            }
            return plan
        }
    }
}

extension PostbackPlan.ReportedValue {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.key("time")
            writer.signed(time)
            if let fine {
                writer.key("fine")
                writer.signed(fine)
            }
            if let coarse {
                writer.key("coarse")
                writer.string(coarse.rawValue)
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, end in
            try reader.key("time")
            var value = Self(time: try reader.signed())
            if try reader.optionalKey("fine", end: end) { value.fine = try reader.signed(Int.self) }
            if try reader.optionalKey("coarse", end: end) { value.coarse = try reader.raw(CoarseConversionValue.self) }
            return value
        }
    }
}

extension PostbackPlan.ClosedWindow {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.key("at")
            writer.signed(at)
            if let values {
                writer.key("values")
                writer.keyed { writer in
                    if let fine = values.fine {
                        writer.key("fine")
                        writer.signed(fine)
                    }
                    if let coarse = values.coarse {
                        writer.key("coarse")
                        writer.string(coarse.rawValue)
                    }
                }
            }
            writer.key("postbacks")
            writer.array(postbacks) { writer, postback in
                writer.keyed { writer in
                    writer.key("contender")
                    writer.signed(postback.contender)
                    writer.key("identifier")
                    writer.string(postback.identifier)
                    writer.key("dueAt")
                    writer.signed(postback.dueAt)
                }
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, end in
            try reader.key("at")
            let at: Milliseconds = try reader.signed()
            var values: PostbackFieldGating.Values?
            if try reader.optionalKey("values", end: end) {
                values = try reader.keyed { reader, end in
                    var values = PostbackFieldGating.Values()
                    if try reader.optionalKey("fine", end: end) { values.fine = try reader.signed(Int.self) }
                    if try reader.optionalKey("coarse", end: end) { values.coarse = try reader.raw(CoarseConversionValue.self) }
                    return values
                }
            }
            try reader.key("postbacks")
            let postbacks = try reader.array { reader in
                try reader.keyed { reader, _ in
                    try reader.key("contender")
                    let contender = try reader.signed(Int.self)
                    try reader.key("identifier")
                    let identifier = try reader.string()
                    try reader.key("dueAt")
                    return Prepared(contender: contender, identifier: identifier, dueAt: try reader.signed())
                }
            }
            return Self(at: at, values: values, postbacks: postbacks)
        }
    }
}

extension CrowdAssessment {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.key("tier")
            writer.signed(tier.rawValue)
            writer.key("sourceIdentifierDigits")
            writer.signed(sourceIdentifierDigits)
            writer.key("countryIsTierThree")
            writer.bool(countryIsTierThree)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, _ in
            try reader.key("tier")
            let tier = CrowdTier(rawValue: try reader.signed(Int.self))
            try reader.key("sourceIdentifierDigits")
            let digits = try reader.signed(Int.self)
            try reader.key("countryIsTierThree")
            return CrowdAssessment(tier: tier, sourceIdentifierDigits: digits, countryIsTierThree: try reader.bool())
        }
    }
}

extension Attribution {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.key("conversion-identifier")
            writer.string(conversionIdentifier)
            writer.key("advertised-item-identifier")
            writer.unsigned(advertisedItemIdentifier)
            writer.key("conversion-type")
            writer.string(conversionType.rawValue)
            writer.key("conversion-time")
            writer.signed(conversionTime)
            if let countryCode {
                writer.key("country-code")
                writer.string(countryCode)
            }
            writer.key("winner")
            winner.write(to: &writer)
            writer.key("non-winners")
            writer.array(nonWinners) { writer, impression in impression.write(to: &writer) }
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
            try reader.key("conversion-identifier")
            let conversion = try reader.string()
            try reader.key("advertised-item-identifier")
            let advertised = try reader.unsigned()
            try reader.key("conversion-type")
            let type = try reader.raw(ConversionType.self)
            try reader.key("conversion-time")
            let time: Milliseconds = try reader.signed()
            let country = try reader.optionalKey("country-code", end: end) ? try reader.string() : nil
            try reader.key("winner")
            let winner = try AttributedImpression(reading: &reader)
            try reader.key("non-winners")
            let nonWinners = try reader.array { try AttributedImpression(reading: &$0) }
            let tag = try reader.optionalKey("conversion-tag", end: end) ? try reader.string() : nil
            let marketplace = try reader.optionalKey("marketplace-identifier", end: end) ? try reader.string() : nil
            return Attribution(
                conversionIdentifier: conversion, advertisedItemIdentifier: advertised, conversionType: type,
                conversionTime: time, countryCode: country, winner: winner, nonWinners: nonWinners, conversionTag: tag,
                marketplaceIdentifier: marketplace)
        }
    }
}

extension AttributedImpression {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.key("ad-network-identifier")
            writer.string(adNetworkIdentifier.rawValue)
            writer.key("impression-identifier")
            writer.string(impressionIdentifier)
            writer.key("source-identifier")
            writer.signed(sourceIdentifier)
            writer.key("publisher-item-identifier")
            writer.unsigned(publisherItemIdentifier)
            writer.key("interaction-type")
            writer.string(interactionType.rawValue)
            writer.key("kind")
            writer.string(kind.rawValue)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader, _ in
            try reader.key("ad-network-identifier")
            guard let network = AdNetworkIdentifier(try reader.string()) else { throw CompactReader.Mismatch() }
            try reader.key("impression-identifier")
            let impression = try reader.string()
            try reader.key("source-identifier")
            let source = try reader.signed(Int.self)
            try reader.key("publisher-item-identifier")
            let publisher = try reader.unsigned()
            try reader.key("interaction-type")
            let interaction = try reader.raw(InteractionType.self)
            try reader.key("kind")
            return AttributedImpression(
                adNetworkIdentifier: network, impressionIdentifier: impression, sourceIdentifier: source,
                publisherItemIdentifier: publisher, interactionType: interaction, kind: try reader.raw(ImpressionKind.self))
        }
    }
}
