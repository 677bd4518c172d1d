/// The times an event may carry: 2000-01-01 to 2100-01-01 (UTC). Anything outside is a broken clock or
/// an attack, and bounding every reported time keeps the rules' arithmetic (differences, window ends,
/// delays) far from Int64 overflow, which would trap and crash a service on one hostile request.
public enum PlausibleTime {
    public static let range: ClosedRange<Milliseconds> = 946_684_800_000...4_102_444_800_000

    public static func contains(_ time: Milliseconds) -> Bool { range.contains(time) }

    /// The problem with `time`, named by its JSON key, or nil when it is plausible.
    public static func problem(_ time: Milliseconds, field: String) -> String? {
        contains(time) ? nil : "\(field) must be milliseconds since 1970 between 2000 and 2100; not \(time)"
    }
}
