import AttributionModel

/// The fault run's accounting: every event ingest acknowledged must have an outcome (attributed or
/// kept, refused with a reason, or dead-lettered with a cause), and every postback that fell due must
/// have been delivered once or dead-lettered. Pure: `LedgerCommand` gathers what it reads.
public struct Ledger: Sendable {
    /// One line of `attribution simulate --acknowledgements`.
    public struct Acknowledged: Codable, Sendable {
        public var kind: String
        public var eventIdentifier: String
        public var device: String

        public init(kind: String, eventIdentifier: String, device: String) {
            self.kind = kind
            self.eventIdentifier = eventIdentifier
            self.device = device
        }

        enum CodingKeys: String, CodingKey {
            case kind
            case eventIdentifier = "event-identifier"
            case device
        }
    }

    /// What the pipeline recorded, by event id (or postback id).
    public struct Records: Sendable {
        public init() {}

        /// Envelope ids on `events`: proof that an acknowledged event reached Redis.
        public var reported: Set<String> = []
        /// Verified event ids → the impression id (empty for other events).
        public var verified: [String: String] = [:]
        /// Event id → reason, from `rejected` (the verifier's and attribution-winner's refusals).
        public var refused: [String: String] = [:]
        /// Event id → "stream: error", from every stage's dead-letter stream.
        public var deadLettered: [String: String] = [:]
        /// Conversion id (its event id) → its attribution.
        public var attributions: [String: Attribution] = [:]
        /// Update or activity event id → the conversion it was routed to, with its time.
        public var routed: [String: (conversion: String, time: Milliseconds)] = [:]
        /// Update or activity event ids that wait in a device's state for their conversion.
        public var waiting: Set<String> = []
        /// Postback id → the order that fell due (on `postbacks`).
        public var due: [String: PostbackOrder] = [:]
        /// Postback ids the receiver accepted (first copies), with how often each occurs in its files.
        public var delivered: [String: Int] = [:]
        /// Postback id → error, from `deliveries:dead`.
        public var deadDeliveries: [String: String] = [:]
        /// Messages not yet finished anywhere: group lag and pending entries, delayed queue items.
        public var inFlight: [String: Int] = [:]
        /// Acknowledged device identifiers found in what the receiver got (must stay empty).
        public var devicesInPostbacks: Set<String> = []
    }

    public struct Report: Codable, Sendable {
        public struct Events: Codable, Sendable {
            public var acknowledged = 0
            /// Outcome → count: `attributed`, `won`, `non-winner`, `in a device pool`, `routed`,
            /// `waiting for its conversion`, `refused: <reason>`, `dead-lettered: <stream>`, `unaccounted`.
            public var outcomes: [String: Int] = [:]
        }

        public struct Postbacks: Codable, Sendable {
            public var due = 0
            public var delivered = 0
            public var deadLettered = 0
            public var unaccounted = 0
            public var deliveredNotDue = 0
            /// Their postback ids, sorted: a fault run relates each to when the receiver got it.
            public var deliveredNotDueIdentifiers: [String] = []
            /// Window-0 winning postbacks the attributions call for, and how many fell due.
            public var expectedFirstWindowWinning = 0
            public var firstWindowWinning = 0
            public var expectedFirstWindowNonWinning = 0
            public var firstWindowNonWinning = 0

            enum CodingKeys: String, CodingKey {
                case due, delivered
                case deadLettered = "dead-lettered"
                case unaccounted
                case deliveredNotDue = "delivered-not-due"
                case deliveredNotDueIdentifiers = "delivered-not-due-identifiers"
                case expectedFirstWindowWinning = "expected-first-window-winning"
                case firstWindowWinning = "first-window-winning"
                case expectedFirstWindowNonWinning = "expected-first-window-non-winning"
                case firstWindowNonWinning = "first-window-non-winning"
            }
        }

        public var events = [String: Events]()
        public var postbacks = Postbacks()
        public var inFlight: [String: Int]
        public var violations: [String] = []

        enum CodingKeys: String, CodingKey {
            case events, postbacks
            case inFlight = "in-flight"
            case violations
        }
    }

    public var acknowledged: [Acknowledged]
    public var records: Records
    public var policy: TimePolicy

    public init(acknowledged: [Acknowledged], records: Records, policy: TimePolicy) {
        self.acknowledged = acknowledged
        self.records = records
        self.policy = policy
    }

    /// At most this many examples per kind of violation are listed.
    public static let examples = 5

    public func account() -> Report {
        var report = Report(inFlight: records.inFlight.filter { $0.value > 0 })
        var unaccounted: [String] = []
        let won = Set(records.attributions.values.map(\.winner.impressionIdentifier))
        let lost = Set(records.attributions.values.flatMap { $0.nonWinners.map(\.impressionIdentifier) })
        for event in acknowledged {
            let outcome = outcome(of: event, won: won, lost: lost)
            report.events[event.kind, default: .init()].acknowledged += 1
            report.events[event.kind, default: .init()].outcomes[outcome, default: 0] += 1
            if outcome == "unaccounted" { unaccounted.append("\(event.kind) \(event.eventIdentifier)") }
        }
        if !unaccounted.isEmpty {
            report.violations.append(
                "\(unaccounted.count) acknowledged events unaccounted, e.g. \(unaccounted.prefix(Self.examples).joined(separator: ", "))"
            )
        }
        accountPostbacks(into: &report)
        if !records.devicesInPostbacks.isEmpty {
            report.violations.append("\(records.devicesInPostbacks.count) device identifiers appear in received postbacks")
        }
        if !report.inFlight.isEmpty {
            report.violations.append("the pipeline is not idle: \(report.inFlight.sorted { $0.key < $1.key })")
        }
        return report
    }

    private func outcome(of event: Acknowledged, won: Set<String>, lost: Set<String>) -> String {
        let id = event.eventIdentifier
        // A refusal names its event: the verifier deletes a refused event from `events` as it refuses it.
        if let reason = records.refused[id] { return "refused: \(reason)" }
        guard records.reported.contains(id) else { return "unaccounted" }
        if let dead = records.deadLettered[id] { return "dead-lettered: \(dead)" }
        guard let impression = records.verified[id] else { return "unaccounted" }
        switch event.kind {
        case "impressions":
            // Verified impressions join their device's pool; the attributions say which ones competed.
            return won.contains(impression) ? "won" : lost.contains(impression) ? "non-winner" : "in a device pool"
        case "conversions":
            return records.attributions[id] != nil ? "attributed" : "unaccounted"
        default:
            if records.routed[id] != nil { return "routed" }
            return records.waiting.contains(id) ? "waiting for its conversion" : "unaccounted"
        }
    }

    private func accountPostbacks(into report: inout Report) {
        var postbacks = Report.Postbacks()
        postbacks.due = records.due.count
        var unaccounted: [String] = []
        var twice: [String] = []
        for id in records.due.keys {
            let copies = records.delivered[id] ?? 0
            if copies > 1 { twice.append(id) }
            if copies > 0 && records.deadDeliveries[id] != nil { twice.append(id) }
            if copies > 0 {
                postbacks.delivered += 1
            } else if records.deadDeliveries[id] != nil {
                postbacks.deadLettered += 1
            } else {
                unaccounted.append(id)
            }
        }
        postbacks.unaccounted = unaccounted.count
        let notDue = records.delivered.keys.filter { records.due[$0] == nil }
        postbacks.deliveredNotDue = notDue.count
        postbacks.deliveredNotDueIdentifiers = notDue.sorted()

        // Duplicates that deduplication by postback id cannot catch: one window's postback prepared
        // twice under two ids. Each attributed conversion with a value by the end of window 0 calls for
        // exactly one winning first-window postback, and one non-winning per non-winner.
        let firstEnd = policy.milliseconds(ConversionWindows.end(of: 0, development: false))
        var valued = Set<String>()
        for (conversion, time) in records.routed.values {
            if let attribution = records.attributions[conversion], !attribution.isDevelopment,
                time < attribution.conversionTime + firstEnd
            {
                valued.insert(conversion)
            }
        }
        postbacks.expectedFirstWindowWinning = valued.count
        postbacks.expectedFirstWindowNonWinning = valued.reduce(0) { $0 + (records.attributions[$1]?.nonWinners.count ?? 0) }
        let first = records.due.values.filter { $0.payload.postbackSequenceIndex == 0 && !$0.isDevelopment }
        postbacks.firstWindowWinning = first.filter(\.payload.didWin).count
        postbacks.firstWindowNonWinning = first.count - postbacks.firstWindowWinning
        report.postbacks = postbacks

        if !unaccounted.isEmpty {
            report.violations.append(
                "\(unaccounted.count) due postbacks neither delivered nor dead-lettered, e.g. \(unaccounted.prefix(Self.examples).joined(separator: ", "))"
            )
        }
        if !twice.isEmpty {
            report.violations.append(
                "\(twice.count) postbacks recorded twice, e.g. \(twice.prefix(Self.examples).joined(separator: ", "))")
        }
        if !notDue.isEmpty {
            report.violations.append(
                "\(notDue.count) postbacks delivered that never fell due, e.g. \(notDue.prefix(Self.examples).joined(separator: ", "))"
            )
        }
        if postbacks.firstWindowWinning != postbacks.expectedFirstWindowWinning
            || postbacks.firstWindowNonWinning != postbacks.expectedFirstWindowNonWinning
        {
            report.violations.append(
                "first-window postbacks: \(postbacks.firstWindowWinning) winning and \(postbacks.firstWindowNonWinning) non-winning fell due; the attributions call for \(postbacks.expectedFirstWindowWinning) and \(postbacks.expectedFirstWindowNonWinning)"
            )
        }
    }
}
