/// The three conversion windows after a conversion: days 0–2, 3–7 and 8–35 (indices 0, 1, 2).
/// Development impressions use Apple's developer-mode timings: 3 minutes each.
public enum ConversionWindows {
    public static let count = 3

    /// Where window `index` ends, measured from the conversion, before scaling.
    public static func end(of index: Int, development: Bool) -> Duration {
        precondition((0..<count).contains(index), "window index out of range")
        if development { return .minutes(Int64(3 * (index + 1))) }
        return [Duration.days(2), .days(7), .days(35)][index]
    }

    /// The window an event `offset` ms after the conversion falls in, or nil once the last has ended.
    public static func index(atOffset offset: Milliseconds, development: Bool, policy: TimePolicy) -> Int? {
        guard offset >= 0 else { return 0 }
        return (0..<count).first { offset < policy.milliseconds(end(of: $0, development: development)) }
    }

    /// The first update must arrive within 60 days of an install or 48 h of a re-engagement.
    public static func firstUpdateDeadline(for type: ConversionType) -> Duration {
        type == .reengagement ? .hours(48) : .days(60)
    }
}
