/// What attribution decided for a re-engagement: a conversion was created (it has a winner and
/// postbacks), or not, and why. attribution-winner records it under the conversion's tag for a minute
/// (`WinnerStep.Effects.outcome`), so that ingest can say it in the answer of a request that waits
/// for it (`Prefer: wait`); the open URL is the same either way.
public enum ConversionOutcome: Sendable, Hashable {
    case created
    case notCreated(ConversionEligibility.Refusal)

    /// How long attribution-winner keeps the record: a waiting request reads it within seconds.
    public static let keptMilliseconds: Milliseconds = 60_000

    /// The record's text: `created`, or `not-created <refusal>`.
    public var recorded: String {
        switch self {
        case .created: "created"
        case .notCreated(let refusal): "not-created \(refusal.rawValue)"
        }
    }

    public init?(recorded: String) {
        if recorded == "created" {
            self = .created
            return
        }
        let parts = recorded.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0] == "not-created", let refusal = ConversionEligibility.Refusal(rawValue: String(parts[1]))
        else { return nil }
        self = .notCreated(refusal)
    }

    /// The answer's `conversion` member: `created` or `not-created`.
    public var conversion: String {
        switch self {
        case .created: "created"
        case .notCreated: "not-created"
        }
    }

    /// The answer's `reason` member when no conversion was created.
    public var reason: String? {
        switch self {
        case .created: nil
        case .notCreated(let refusal): refusal.rawValue
        }
    }
}
