/// The postback plan's hand-written compact form (`CompactHandCoded`): the scheduler reads and writes
/// a plan on every message of its conversion. Each writer mirrors its type's `encode(to:)` (its own or
/// the synthesized one: same keys, same order, optional keys left out when nil); the readers read that
/// order back (the schema's members in any order: `ConversionValues+Compact`).
extension PostbackPlan: CompactHandCoded {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.key("attribution")
            attribution.write(to: &writer)
            writer.key("crowd")
            crowd.write(to: &writer)
            writer.field("firstUpdateAt", ifPresent: firstUpdateAt)
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
                valueSchema.write(to: &writer)
                writer.key("activityTotals")
                writer.array(activityTotals) { writer, totals in totals.write(to: &writer) }
                writer.key("schemaValues")
                writer.array(schemaValues) { writer, value in
                    if let value { value.write(to: &writer) } else { writer.null() }
                }
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            try reader.key("attribution")
            let attribution = try Attribution(reading: &reader)
            try reader.key("crowd")
            let crowd = try CrowdAssessment(reading: &reader)
            var plan = PostbackPlan(attribution: attribution, crowd: crowd)
            // `init(attribution:crowd:)` gives a development winner the development crowd; the stored one counts.
            plan.crowd = crowd
            plan.firstUpdateAt = try reader.signed(ifPresent: "firstUpdateAt")
            try reader.key("reported")
            plan.reported = try reader.array { try ReportedValue(reading: &$0) }
            try reader.key("windowsDone")
            plan.windowsDone = try reader.array { try $0.bool() }
            if try reader.optionalKey("closed") {
                plan.closed = try reader.array { reader in reader.null() ? nil : try ClosedWindow(reading: &reader) }
            }
            if try reader.optionalKey("valueSchema") {
                plan.valueSchema = try ConversionValueSchema(reading: &reader)
                try reader.key("activityTotals")
                plan.activityTotals = try reader.array { try ActivityTotals(reading: &$0) }
                try reader.key("schemaValues")
                plan.schemaValues = try reader.array { reader in reader.null() ? nil : try SchemaValue(reading: &reader) }
            }
            // One entry per conversion window in each, or the plan's rules would index past them.
            let windows = ConversionWindows.count
            guard
                plan.windowsDone.count == windows, plan.closed.count == windows, plan.activityTotals.count == windows,
                plan.schemaValues.count == windows
            else { throw CompactReader.Mismatch() }
            return plan
        }
    }
}

extension PostbackPlan.ReportedValue {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("time", time)
            writer.field("fine", ifPresent: fine)
            writer.field("coarse", ifPresent: coarse)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            Self(
                time: try reader.signed("time"), fine: try reader.signed(ifPresent: "fine", as: Int.self),
                coarse: try reader.raw(ifPresent: "coarse", as: CoarseConversionValue.self))
        }
    }
}

extension PostbackPlan.ClosedWindow {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("at", at)
            if let values {
                writer.key("values")
                writer.keyed { writer in
                    writer.field("fine", ifPresent: values.fine)
                    writer.field("coarse", ifPresent: values.coarse)
                }
            }
            writer.key("postbacks")
            writer.array(postbacks) { writer, postback in
                writer.keyed { writer in
                    writer.field("contender", postback.contender)
                    writer.field("identifier", postback.identifier)
                    writer.field("dueAt", postback.dueAt)
                }
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            let at: Milliseconds = try reader.signed("at")
            var values: PostbackFieldGating.Values?
            if try reader.optionalKey("values") {
                values = try reader.keyed { reader in
                    PostbackFieldGating.Values(
                        fine: try reader.signed(ifPresent: "fine", as: Int.self),
                        coarse: try reader.raw(ifPresent: "coarse", as: CoarseConversionValue.self))
                }
            }
            try reader.key("postbacks")
            let postbacks = try reader.array { reader in
                try reader.keyed { reader in
                    Prepared(
                        contender: try reader.signed("contender", as: Int.self), identifier: try reader.string("identifier"),
                        dueAt: try reader.signed("dueAt"))
                }
            }
            return Self(at: at, values: values, postbacks: postbacks)
        }
    }
}

extension CrowdAssessment {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("tier", tier.rawValue)
            writer.field("sourceIdentifierDigits", sourceIdentifierDigits)
            writer.field("countryIsTierThree", countryIsTierThree)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            CrowdAssessment(
                tier: CrowdTier(rawValue: try reader.signed("tier", as: Int.self)),
                sourceIdentifierDigits: try reader.signed("sourceIdentifierDigits", as: Int.self),
                countryIsTierThree: try reader.bool("countryIsTierThree"))
        }
    }
}

extension Attribution {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("conversion-identifier", conversionIdentifier)
            writer.field("advertised-item-identifier", advertisedItemIdentifier)
            writer.field("conversion-type", conversionType)
            writer.field("conversion-time", conversionTime)
            writer.field("country-code", ifPresent: countryCode)
            writer.key("winner")
            winner.write(to: &writer)
            writer.key("non-winners")
            writer.array(nonWinners) { writer, impression in impression.write(to: &writer) }
            writer.field("conversion-tag", ifPresent: conversionTag)
            writer.field("marketplace-identifier", ifPresent: marketplaceIdentifier)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            let conversion = try reader.string("conversion-identifier")
            let advertised = try reader.unsigned("advertised-item-identifier")
            let type = try reader.raw("conversion-type", as: ConversionType.self)
            let time: Milliseconds = try reader.signed("conversion-time")
            let country = try reader.string(ifPresent: "country-code")
            try reader.key("winner")
            let winner = try AttributedImpression(reading: &reader)
            try reader.key("non-winners")
            let nonWinners = try reader.array { try AttributedImpression(reading: &$0) }
            return Attribution(
                conversionIdentifier: conversion, advertisedItemIdentifier: advertised, conversionType: type,
                conversionTime: time, countryCode: country, winner: winner, nonWinners: nonWinners,
                conversionTag: try reader.string(ifPresent: "conversion-tag"),
                marketplaceIdentifier: try reader.string(ifPresent: "marketplace-identifier"))
        }
    }
}

extension AttributedImpression {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("ad-network-identifier", adNetworkIdentifier.rawValue)
            writer.field("impression-identifier", impressionIdentifier)
            writer.field("source-identifier", sourceIdentifier)
            writer.field("publisher-item-identifier", publisherItemIdentifier)
            writer.field("interaction-type", interactionType)
            writer.field("kind", kind)
        }
    }

    init(reading reader: inout CompactReader) throws {
        self = try reader.keyed { reader in
            guard let network = AdNetworkIdentifier(try reader.string("ad-network-identifier")) else {
                throw CompactReader.Mismatch()
            }
            return AttributedImpression(
                adNetworkIdentifier: network, impressionIdentifier: try reader.string("impression-identifier"),
                sourceIdentifier: try reader.signed("source-identifier", as: Int.self),
                publisherItemIdentifier: try reader.unsigned("publisher-item-identifier"),
                interactionType: try reader.raw("interaction-type", as: InteractionType.self),
                kind: try reader.raw("kind", as: ImpressionKind.self))
        }
    }
}
