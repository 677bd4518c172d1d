import Foundation

/// The stored forms of what an app's conversion-value schema adds to the stored state: pending
/// activity in a device's state, and a plan's pinned schema, window totals and values. Written as
/// their `Codable` forms are (dictionaries in key order), read in any key order: they are present only
/// for apps with a schema, so tolerance costs nothing per event.
extension ActivityReport {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("device-identifier", deviceIdentifier)
            writer.field("advertised-item-identifier", advertisedItemIdentifier)
            writer.key("activity")
            activity.write(to: &writer)
            writer.field("time", time)
            writer.field("received-at", receivedAt)
            writer.field("conversion-tag", ifPresent: conversionTag)
            writer.field("event-identifier", ifPresent: eventIdentifier)
        }
    }

    init(reading reader: inout CompactReader) throws {
        var device: String?
        var item: ItemIdentifier?
        var activity: Activity?
        var time: Milliseconds?
        var receivedAt: Milliseconds?
        var tag: String?
        var event: String?
        try reader.entries { reader, key in
            switch key {
            case "device-identifier": device = try reader.string()
            case "advertised-item-identifier": item = try reader.unsigned()
            case "activity": activity = try Activity(reading: &reader)
            case "time": time = try reader.signed()
            case "received-at": receivedAt = try reader.signed()
            case "conversion-tag": tag = try reader.string()
            case "event-identifier": event = try reader.string()
            default: throw CompactReader.Mismatch()
            }
        }
        guard let device, let item, let activity, let time, let receivedAt else { throw CompactReader.Mismatch() }
        self.init(
            deviceIdentifier: device, advertisedItemIdentifier: item, activity: activity, time: time, receivedAt: receivedAt,
            conversionTag: tag)
        eventIdentifier = event
    }
}

extension Activity {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("sessions", ifPresent: sessions)
            if let events {
                writer.key("events")
                writer.dictionary(events) { writer, count in writer.signed(count) }
            }
            if let revenue {
                writer.key("revenue")
                writer.dictionary(revenue) { writer, amount in writer.decimal(amount) }
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        self.init()
        try reader.entries { reader, key in
            switch key {
            case "sessions": sessions = try reader.signed(Int.self)
            case "events": events = try reader.dictionary { try $0.signed(Int.self) }
            case "revenue": revenue = try reader.dictionary { try $0.decimal() }
            default: throw CompactReader.Mismatch()
            }
        }
    }
}

extension ActivityTotals {
    /// Stored as an activity is (the same three members, all present here).
    func write(to writer: inout CompactWriter) {
        Activity(sessions: sessions, events: events, revenue: revenue).write(to: &writer)
    }

    init(reading reader: inout CompactReader) throws {
        let activity = try Activity(reading: &reader)
        guard let sessions = activity.sessions, let events = activity.events, let revenue = activity.revenue else {
            throw CompactReader.Mismatch()
        }
        self.init(sessions: sessions, events: events, revenue: revenue)
    }
}

extension SchemaValue {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("fine", fine)
            writer.field("coarse", coarse)
            writer.field("lock", lock)
        }
    }

    init(reading reader: inout CompactReader) throws {
        var fine: Int?
        var coarse: CoarseConversionValue?
        var lock: Bool?
        try reader.entries { reader, key in
            switch key {
            case "fine": fine = try reader.signed(Int.self)
            case "coarse": coarse = try reader.raw(CoarseConversionValue.self)
            case "lock": lock = try reader.bool()
            default: throw CompactReader.Mismatch()
            }
        }
        guard let fine, let coarse, let lock else { throw CompactReader.Mismatch() }
        self.init(fine: fine, coarse: coarse, lock: lock)
    }
}

extension ConversionValueSchema {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.field("version", ifPresent: version)
            writer.key("windows")
            writer.array(windows) { writer, window in
                writer.keyed { writer in
                    writer.field("window", window.window)
                    writer.key("rules")
                    writer.array(window.rules) { writer, rule in rule.write(to: &writer) }
                    writer.field("allow-decrease", ifPresent: window.allowDecrease)
                }
            }
        }
    }

    init(reading reader: inout CompactReader) throws {
        var version: Int?
        var windows: [WindowRules]?
        try reader.entries { reader, key in
            switch key {
            case "version": version = try reader.signed(Int.self)
            case "windows": windows = try reader.array { try WindowRules(reading: &$0) }
            default: throw CompactReader.Mismatch()
            }
        }
        guard let windows else { throw CompactReader.Mismatch() }
        self.init(version: version, windows: windows)
    }
}

extension ConversionValueSchema.WindowRules {
    init(reading reader: inout CompactReader) throws {
        var window: Int?
        var rules: [ConversionValueSchema.Rule]?
        var allowDecrease: Bool?
        try reader.entries { reader, key in
            switch key {
            case "window": window = try reader.signed(Int.self)
            case "rules": rules = try reader.array { try ConversionValueSchema.Rule(reading: &$0) }
            case "allow-decrease": allowDecrease = try reader.bool()
            default: throw CompactReader.Mismatch()
            }
        }
        guard let window, let rules else { throw CompactReader.Mismatch() }
        self.init(window: window, rules: rules, allowDecrease: allowDecrease)
    }
}

extension ConversionValueSchema.Rule {
    func write(to writer: inout CompactWriter) {
        writer.keyed { writer in
            writer.key("when")
            // A condition is stored as an activity is: the same three optional members.
            Activity(sessions: when.sessions, events: when.events, revenue: when.revenue).write(to: &writer)
            writer.field("fine", fine)
            writer.field("coarse", coarse)
            writer.field("lock", ifPresent: lock)
        }
    }

    init(reading reader: inout CompactReader) throws {
        var when: ConversionValueSchema.Condition?
        var fine: Int?
        var coarse: CoarseConversionValue?
        var lock: Bool?
        try reader.entries { reader, key in
            switch key {
            case "when":
                let condition = try Activity(reading: &reader)
                when = .init(sessions: condition.sessions, events: condition.events, revenue: condition.revenue)
            case "fine": fine = try reader.signed(Int.self)
            case "coarse": coarse = try reader.raw(CoarseConversionValue.self)
            case "lock": lock = try reader.bool()
            default: throw CompactReader.Mismatch()
            }
        }
        guard let when, let fine, let coarse else { throw CompactReader.Mismatch() }
        self.init(when: when, fine: fine, coarse: coarse, lock: lock)
    }
}
