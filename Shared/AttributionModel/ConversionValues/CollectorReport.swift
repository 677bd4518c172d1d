import Foundation

/// A postback as a measurement partner sees it after verification: the common fields of both kinds,
/// its values, and what they mean under the app's schema.
public struct CollectedPostback: Sendable, Codable, Hashable {
    public var kind: String
    public var adNetworkIdentifier: String
    public var sourceIdentifier: String
    public var advertisedItemIdentifier: ItemIdentifier
    public var publisherItemIdentifier: ItemIdentifier?
    public var conversionType: ConversionType
    public var postbackIdentifier: String
    public var window: Int
    public var didWin: Bool
    public var fine: Int?
    public var coarse: CoarseConversionValue?
    public var countryCode: String?
    /// The crowd tier the fields reveal (see `inferredTier`).
    public var tier: String
    /// The value decoded with the app's schema, when one was given for the app.
    public var decoded: DecodedConversionValue?

    public init(
        kind: String, payload: PostbackPayload, fine: Int?, coarse: CoarseConversionValue?, countryCode: String?,
        schema: ConversionValueSchema?
    ) {
        self.kind = kind
        self.adNetworkIdentifier = payload.adNetworkIdentifier.rawValue
        self.sourceIdentifier = payload.sourceIdentifier
        self.advertisedItemIdentifier = payload.advertisedItemIdentifier
        self.publisherItemIdentifier = payload.publisherItemIdentifier
        self.conversionType = payload.conversionType
        self.postbackIdentifier = payload.postbackIdentifier
        self.window = payload.postbackSequenceIndex
        self.didWin = payload.didWin
        self.fine = fine
        self.coarse = coarse
        self.countryCode = countryCode
        self.tier = Self.inferredTier(payload: payload, fine: fine, coarse: coarse)
        self.decoded =
            (fine != nil || coarse != nil)
            ? schema?.decode(window: payload.postbackSequenceIndex, fine: fine, coarse: coarse) : nil
    }

    /// The lowest tier consistent with the fields (spec section 5): a first winning postback with a
    /// publisher id is tier 3, with a fine value tier 2, with only a coarse value tier 1, with none
    /// tier 0; a later or non-winning postback with a value is at least tier 1 ("1+"), without one "0".
    public static func inferredTier(payload: PostbackPayload, fine: Int?, coarse: CoarseConversionValue?) -> String {
        if payload.postbackSequenceIndex == 0 && payload.didWin {
            if payload.publisherItemIdentifier != nil { return "3" }
            if fine != nil { return "2" }
            return coarse != nil ? "1" : "0"
        }
        return fine != nil || coarse != nil ? "1+" : "0"
    }

    enum CodingKeys: String, CodingKey {
        case kind
        case adNetworkIdentifier = "ad-network-identifier"
        case sourceIdentifier = "source-identifier"
        case advertisedItemIdentifier = "advertised-item-identifier"
        case publisherItemIdentifier = "publisher-item-identifier"
        case conversionType = "conversion-type"
        case postbackIdentifier = "postback-identifier"
        case window
        case didWin = "did-win"
        case fine = "conversion-value"
        case coarse = "coarse-conversion-value"
        case countryCode = "country-code"
        case tier, decoded
    }
}

/// The campaign report: postbacks grouped by ad network, source identifier (at the digits received),
/// window, tier and conversion type, with the activity their values stand for summed as ranges
/// (revenue at least … and, where every postback's value is bounded, below …).
public struct CollectorReport: Sendable, Codable, Hashable {
    public struct Key: Sendable, Codable, Hashable, Comparable {
        public var adNetworkIdentifier: String
        public var sourceIdentifier: String
        public var window: Int
        public var tier: String
        public var conversionType: ConversionType

        public static func < (a: Key, b: Key) -> Bool {
            (a.adNetworkIdentifier, a.sourceIdentifier, a.window, a.tier, a.conversionType.rawValue)
                < (b.adNetworkIdentifier, b.sourceIdentifier, b.window, b.tier, b.conversionType.rawValue)
        }

        enum CodingKeys: String, CodingKey {
            case adNetworkIdentifier = "ad-network-identifier"
            case sourceIdentifier = "source-identifier"
            case window, tier
            case conversionType = "conversion-type"
        }
    }

    public struct Row: Sendable, Codable, Hashable {
        public var key: Key
        public var postbacks = 0
        public var winning = 0
        /// Postbacks whose value the schema decodes (the rest had no value or no schema).
        public var decoded = 0
        public var revenueAtLeast: [String: Decimal] = [:]
        /// Present for a currency only while every decoded postback bounded it from above.
        public var revenueBelow: [String: Decimal] = [:]
        public var eventsAtLeast: [String: Int] = [:]
        public var sessionsAtLeast = 0
        /// Counts of each fine value received.
        public var fineValues: [String: Int] = [:]
        public var coarseValues: [String: Int] = [:]

        enum CodingKeys: String, CodingKey {
            case key, postbacks, winning, decoded
            case revenueAtLeast = "revenue-at-least"
            case revenueBelow = "revenue-below"
            case eventsAtLeast = "events-at-least"
            case sessionsAtLeast = "sessions-at-least"
            case fineValues = "fine-values"
            case coarseValues = "coarse-values"
        }
    }

    public var rows: [Key: Row] = [:]
    public var postbacks = 0

    public init() {}

    /// Adds one (already deduplicated) postback. A value several rules give counts with the loosest
    /// reading: the smallest lower bound, and an upper bound only if every reading has one.
    public mutating func add(_ postback: CollectedPostback) {
        let key = Key(
            adNetworkIdentifier: postback.adNetworkIdentifier, sourceIdentifier: postback.sourceIdentifier,
            window: postback.window, tier: postback.tier, conversionType: postback.conversionType)
        var row = rows[key] ?? Row(key: key)
        let first = row.postbacks == 0
        row.postbacks += 1
        postbacks += 1
        if postback.didWin { row.winning += 1 }
        if let fine = postback.fine { row.fineValues[String(fine), default: 0] += 1 }
        if let coarse = postback.coarse { row.coarseValues[coarse.rawValue, default: 0] += 1 }
        if let ranges = postback.decoded?.ranges, !ranges.isEmpty {
            row.decoded += 1
            let currencies = Set(ranges.flatMap(\.revenue.keys))
            for currency in currencies {
                let bounds = ranges.map { $0.revenue[currency] }
                let low = bounds.map { $0?.atLeast ?? 0 }.min() ?? 0
                row.revenueAtLeast[currency, default: 0] += low
                let highs = bounds.map { $0?.below }
                if highs.allSatisfy({ $0 != nil }), first || row.revenueBelow[currency] != nil {
                    row.revenueBelow[currency, default: 0] += highs.compactMap { $0 }.max() ?? 0
                } else {
                    row.revenueBelow[currency] = nil
                }
            }
            for name in Set(ranges.flatMap(\.events.keys)) {
                row.eventsAtLeast[name, default: 0] += ranges.map { $0.events[name]?.atLeast ?? 0 }.min() ?? 0
            }
            row.sessionsAtLeast += ranges.map { $0.sessions?.atLeast ?? 0 }.min() ?? 0
        }
        rows[key] = row
    }

    /// One line per group, in key order: the CSV form of the report.
    public func csv() -> String {
        var lines = [
            "ad_network,source_identifier,window,tier,conversion_type,postbacks,winning,decoded,revenue_at_least,revenue_below,events_at_least,sessions_at_least,fine_values,coarse_values"
        ]
        func pairs<V>(_ values: [String: V]) -> String {
            values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        for key in rows.keys.sorted() {
            let row = rows[key]!
            let fields: [String] = [
                key.adNetworkIdentifier, key.sourceIdentifier, String(key.window), key.tier, key.conversionType.rawValue,
                String(row.postbacks), String(row.winning), String(row.decoded), pairs(row.revenueAtLeast),
                pairs(row.revenueBelow),
                pairs(row.eventsAtLeast), String(row.sessionsAtLeast), pairs(row.fineValues), pairs(row.coarseValues),
            ]
            lines.append(fields.map(Self.csvField).joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The JSON form: rows in key order.
    public var sortedRows: [Row] { rows.keys.sorted().map { rows[$0]! } }
}
