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

    /// Where window `index` starts, measured from the conversion: nil for the first, which takes
    /// everything from before the conversion too; a later one starts where the previous one ends.
    public static func start(of index: Int, development: Bool) -> Duration? {
        index == 0 ? nil : end(of: index - 1, development: development)
    }

    /// The window an event `offset` ms after the conversion falls in, or nil once the last has ended.
    public static func index(atOffset offset: Milliseconds, development: Bool, policy: TimePolicy) -> Int? {
        guard offset >= 0 else { return 0 }
        return (0..<count).first { offset < policy.milliseconds(end(of: $0, development: development)) }
    }

    /// How long after a window's end its timer fires: updates stamped before the end but still on their
    /// way (settling conversions, retries, replicas) get `configured` wall-clock ms to arrive. The
    /// postback is still prepared as of the end; the grace is capped at half the shortest postback delay
    /// so the drawn send time is never in the past when the timer fires.
    public static func closeGrace(configured: Milliseconds, development: Bool, policy: TimePolicy) -> Milliseconds {
        let shortestDelay = policy.milliseconds(PostbackDelay.range(sequenceIndex: 0, development: development).lowerBound)
        return max(0, min(configured, shortestDelay / 2))
    }

    /// How long a conversion waits (wall clock) for impressions reported just after it before it is
    /// attributed: `configured`, capped at half the first window's scaled length (a production
    /// window: the conversion's winner is not known yet), so a conversion always keeps most of its first
    /// window for updates, whatever `TIME_SCALE` is. Real time: 24 h, never reached by the 2 s default;
    /// `TIME_SCALE=86400`: 1 s; 172800: 500 ms.
    public static func settle(configured: Milliseconds, policy: TimePolicy) -> Milliseconds {
        max(0, min(configured, policy.milliseconds(end(of: 0, development: false)) / 2))
    }

    /// The first update must arrive within 60 days of an install or 48 h of a re-engagement.
    public static func firstUpdateDeadline(for type: ConversionType) -> Duration {
        type == .reengagement ? .hours(48) : .days(60)
    }
}
