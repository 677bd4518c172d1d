import Foundation

/// An advertised app's rules for turning post-install activity into conversion values, so an app team
/// never computes one by hand: per conversion window, an ordered list of rules, the first whose
/// condition holds giving the fine value (0–63), the coarse value and whether to lock. List the rules
/// from the most valuable to the least ("revenue ≥ 20 USD → 60", then "revenue ≥ 5 USD → 42", ...).
///
/// Schemas are versioned by the registry (`version` is assigned on upload); the version in force when a
/// conversion is attributed stays with that conversion for its whole lifecycle.
public struct ConversionValueSchema: Sendable, Codable, Hashable {
    public var version: Int?
    public var windows: [WindowRules]

    public init(version: Int? = nil, windows: [WindowRules]) {
        self.version = version
        self.windows = windows
    }

    /// The rules of one conversion window (0, 1 or 2).
    public struct WindowRules: Sendable, Codable, Hashable {
        public var window: Int
        public var rules: [Rule]
        /// Whether a later evaluation may lower the fine value within the window (default: never).
        public var allowDecrease: Bool?

        public init(window: Int, rules: [Rule], allowDecrease: Bool? = nil) {
            self.window = window
            self.rules = rules
            self.allowDecrease = allowDecrease
        }

        enum CodingKeys: String, CodingKey {
            case window, rules
            case allowDecrease = "allow-decrease"
        }
    }

    public struct Rule: Sendable, Codable, Hashable {
        public var when: Condition
        public var fine: Int
        public var coarse: CoarseConversionValue
        /// The window's measurement is complete once this rule applies: the update locks it.
        public var lock: Bool?

        public init(when: Condition, fine: Int, coarse: CoarseConversionValue, lock: Bool? = nil) {
            self.when = when
            self.fine = fine
            self.coarse = coarse
            self.lock = lock
        }
    }

    /// Lower bounds that must all hold over the window's totals; an empty condition always holds.
    public struct Condition: Sendable, Codable, Hashable {
        /// At least this many sessions.
        public var sessions: Int?
        /// At least this many of each named event.
        public var events: [String: Int]?
        /// At least this much revenue in each currency (ISO 4217 code → amount).
        public var revenue: [String: Decimal]?

        public init(sessions: Int? = nil, events: [String: Int]? = nil, revenue: [String: Decimal]? = nil) {
            self.sessions = sessions
            self.events = events
            self.revenue = revenue
        }

        public func holds(for totals: ActivityTotals) -> Bool {
            if let sessions, totals.sessions < sessions { return false }
            for (name, count) in events ?? [:] where totals.events[name, default: 0] < count { return false }
            for (currency, amount) in revenue ?? [:] where totals.revenue[currency, default: 0] < amount { return false }
            return true
        }
    }

    public func rules(for window: Int) -> WindowRules? { windows.first { $0.window == window } }
}

/// What the app reported for a device during one conversion window, summed.
public struct ActivityTotals: Sendable, Codable, Hashable {
    public var sessions: Int
    public var events: [String: Int]
    public var revenue: [String: Decimal]

    public init(sessions: Int = 0, events: [String: Int] = [:], revenue: [String: Decimal] = [:]) {
        self.sessions = sessions
        self.events = events
        self.revenue = revenue
    }

    public mutating func add(_ activity: Activity) {
        sessions += activity.sessions ?? 0
        for (name, count) in activity.events ?? [:] { events[name, default: 0] += count }
        for (currency, amount) in activity.revenue ?? [:] { revenue[currency, default: 0] += amount }
    }
}

/// One activity report from the app's SDK: sessions, named events and revenue since the last report.
public struct Activity: Sendable, Codable, Hashable {
    public var sessions: Int?
    public var events: [String: Int]?
    public var revenue: [String: Decimal]?

    public init(sessions: Int? = nil, events: [String: Int]? = nil, revenue: [String: Decimal]? = nil) {
        self.sessions = sessions
        self.events = events
        self.revenue = revenue
    }

    public var isEmpty: Bool {
        (sessions ?? 0) == 0 && (events ?? [:]).isEmpty && (revenue ?? [:]).isEmpty
    }
}

/// The value a schema gives, and whether reporting it is an update.
public struct SchemaValue: Sendable, Codable, Hashable {
    public var fine: Int
    public var coarse: CoarseConversionValue
    public var lock: Bool

    public init(fine: Int, coarse: CoarseConversionValue, lock: Bool) {
        self.fine = fine
        self.coarse = coarse
        self.lock = lock
    }
}

extension ConversionValueSchema {
    /// The outcome of evaluating the schema over a window's totals.
    public struct Evaluation: Sendable, Hashable {
        /// The value the app should have reported (nil: no rule holds yet).
        public var value: SchemaValue?
        /// Whether `value` differs from `previous` and may be reported: an update to send.
        public var changed: Bool
    }

    /// Evaluates `window`'s rules: the first rule that holds gives the value. It is an update only when
    /// it differs from `previous` (the last value sent in this window) and does not lower the fine
    /// value, unless the window allows decreases. A locked window never changes.
    public func evaluate(window: Int, totals: ActivityTotals, previous: SchemaValue?) -> Evaluation {
        guard let rules = rules(for: window), let rule = rules.rules.first(where: { $0.when.holds(for: totals) }) else {
            return Evaluation(value: previous, changed: false)
        }
        let value = SchemaValue(fine: rule.fine, coarse: rule.coarse, lock: rule.lock ?? false)
        guard let previous else { return Evaluation(value: value, changed: true) }
        if previous.lock { return Evaluation(value: previous, changed: false) }
        if value.fine < previous.fine && rules.allowDecrease != true { return Evaluation(value: previous, changed: false) }
        return Evaluation(value: value, changed: value != previous)
    }

    /// Every problem, each naming the field: fine 0–63, windows 0–2 once each, counts and amounts ≥ 0,
    /// currencies as three capital letters, event names 1–64 characters, at most 64 rules per window.
    public func validationProblems() -> [String] {
        var problems: [String] = []
        var seen = Set<Int>()
        if windows.isEmpty { problems.append("windows: at least one window needs rules") }
        for entry in windows {
            let w = "windows[\(entry.window)]"
            if !(0...2).contains(entry.window) { problems.append("\(w): window must be 0, 1 or 2") }
            if !seen.insert(entry.window).inserted { problems.append("\(w): window listed twice") }
            if entry.rules.isEmpty || entry.rules.count > 64 { problems.append("\(w): 1–64 rules") }
            for (index, rule) in entry.rules.enumerated() {
                let r = "\(w).rules[\(index)]"
                if !(0...63).contains(rule.fine) { problems.append("\(r).fine must be within 0–63") }
                if let sessions = rule.when.sessions, sessions < 0 { problems.append("\(r).when.sessions must be ≥ 0") }
                for (name, count) in rule.when.events ?? [:] {
                    if name.isEmpty || name.count > 64 { problems.append("\(r).when.events: names are 1–64 characters") }
                    if count < 0 { problems.append("\(r).when.events.\(name) must be ≥ 0") }
                }
                for (currency, amount) in rule.when.revenue ?? [:] {
                    if !Self.isCurrency(currency) { problems.append("\(r).when.revenue: \(currency) is not an ISO 4217 code") }
                    if amount < 0 { problems.append("\(r).when.revenue.\(currency) must be ≥ 0") }
                }
            }
        }
        return problems
    }

    static func isCurrency(_ code: String) -> Bool {
        code.utf8.count == 3 && code.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }
}

extension Activity {
    /// Every problem, each naming the field: counts within 0–1,000,000, event names 1–64 characters (at
    /// most 64 per report), revenue as ISO 4217 code → amount within 0–1,000,000.
    public func validationProblems() -> [String] {
        var problems: [String] = []
        if let sessions, !(0...1_000_000).contains(sessions) { problems.append("sessions must be within 0–1000000") }
        if (events ?? [:]).count > 64 { problems.append("events: at most 64 names per report") }
        for (name, count) in events ?? [:] {
            if name.isEmpty || name.count > 64 { problems.append("events: names are 1–64 characters") }
            if !(0...1_000_000).contains(count) { problems.append("events.\(name) must be within 0–1000000") }
        }
        for (currency, amount) in revenue ?? [:] {
            if !ConversionValueSchema.isCurrency(currency) { problems.append("revenue: \(currency) is not an ISO 4217 code") }
            if amount < 0 || amount > 1_000_000 { problems.append("revenue.\(currency) must be within 0–1000000") }
        }
        if isEmpty { problems.append("an activity report needs sessions, events or revenue") }
        return problems
    }
}

/// A received value turned back into what the app did: the measurement partner's side of the schema.
public struct DecodedConversionValue: Sendable, Codable, Hashable {
    /// A lower bound and, when a better rule bounds the same single metric, an upper bound (exclusive).
    public struct Bounds<Value: Sendable & Codable & Hashable>: Sendable, Codable, Hashable {
        public var atLeast: Value
        public var below: Value?

        public init(atLeast: Value, below: Value?) {
            self.atLeast = atLeast
            self.below = below
        }

        enum CodingKeys: String, CodingKey {
            case atLeast = "at-least"
            case below
        }
    }

    /// What one rule giving the value says about the window's totals.
    public struct Range: Sendable, Codable, Hashable {
        public var sessions: Bounds<Int>?
        public var events: [String: Bounds<Int>]
        public var revenue: [String: Bounds<Decimal>]
    }

    public var window: Int
    public var fine: Int?
    public var coarse: CoarseConversionValue?
    /// One range per rule that gives this value (empty: no rule does, the value is not the schema's).
    public var ranges: [Range]
}

extension ConversionValueSchema {
    /// The ranges of activity a received value stands for: the window's rules that give this fine
    /// value (or, without one, this coarse value), each with its lower bounds, and upper bounds from the
    /// better rules that constrain just that one metric (had the totals reached them, that rule would
    /// have given the value).
    public func decode(window: Int, fine: Int?, coarse: CoarseConversionValue?) -> DecodedConversionValue {
        let rules = rules(for: window)?.rules ?? []
        var ranges: [DecodedConversionValue.Range] = []
        for (index, rule) in rules.enumerated() {
            guard fine.map({ $0 == rule.fine }) ?? (coarse.map { $0 == rule.coarse } ?? false) else { continue }
            let better = rules.prefix(index).map(\.when)
            // Only better rules with a single threshold bound a metric from above.
            let single = better.filter { Self.metricCount($0) == 1 }
            func upper<T: Comparable>(_ metric: (Condition) -> [String: T]?, _ key: String) -> T? {
                single.compactMap { metric($0)?[key] }.min()
            }
            let sessionsUpper = single.compactMap(\.sessions).min()
            ranges.append(
                DecodedConversionValue.Range(
                    sessions: rule.when.sessions.map { .init(atLeast: $0, below: sessionsUpper) },
                    events: (rule.when.events ?? [:]).reduce(into: [:]) { result, entry in
                        result[entry.key] = .init(atLeast: entry.value, below: upper({ $0.events }, entry.key))
                    },
                    revenue: (rule.when.revenue ?? [:]).reduce(into: [:]) { result, entry in
                        result[entry.key] = .init(atLeast: entry.value, below: upper({ $0.revenue }, entry.key))
                    }))
        }
        return DecodedConversionValue(window: window, fine: fine, coarse: fine == nil ? coarse : nil, ranges: ranges)
    }

    /// How many separate thresholds a condition sets.
    static func metricCount(_ condition: Condition) -> Int {
        (condition.sessions == nil ? 0 : 1) + (condition.events ?? [:]).count + (condition.revenue ?? [:]).count
    }
}
