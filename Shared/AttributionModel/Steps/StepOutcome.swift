/// What one stage step decided for one message: its effects, or "leave it pending and retry" (a
/// neighbouring message it depends on has not been processed yet, or the message is not this stage's).
public enum StepOutcome<Effects: Sendable>: Sendable {
    case done(Effects)
    /// The message stays pending; after the stage's attempts run out it is dead-lettered with this text.
    case retry(String)
}

/// What a step asks the service to count once its effects are committed (never for a redone batch).
public enum StepCount: Sendable, Hashable {
    /// attribution-winner: an impression reported after a conversion it could have won was attributed.
    case lateImpression
    /// attribution-winner: a settled conversion waits longer, because `verified` is not yet read up to
    /// its horizon (the winner is behind).
    case settleExtended
    /// attribution-winner: an update in SKAdNetwork's shape that no conversion took while it waited,
    /// ignored as Apple ignores one with no pending postback.
    case skadnetworkUpdateIgnored
    /// attribution-winner: a conversion delivered again after it was attributed, ignored.
    case redeliveredConversion
    /// attribution-winner: a conversion attributed, or refused with this reason.
    case conversion(ConversionStepOutcome)
    /// verifier: an event refused with this reason.
    case rejection(RejectionReason)
    /// scheduler: an ad network's test postbacks made, due now.
    case testPostbacks
    /// scheduler: what a late update (or supersession) did to a window's postbacks.
    case latePostback(LatePostbackChange)
    /// dispatcher: one delivery attempt and how it ended.
    case delivery(DeliveryOutcome, attempt: Int)
}

public enum ConversionStepOutcome: Sendable, Hashable {
    case attributed
    case refused(ConversionEligibility.Refusal)

    /// The metric label: `attributed` or the refusal's reason code.
    public var label: String {
        switch self {
        case .attributed: "attributed"
        case .refused(let refusal): refusal.rawValue
        }
    }
}

/// `prepared` for a window that had no postback yet, `swapped` for a held one, `too-late` for one
/// already released (the late value never goes out).
public enum LatePostbackChange: String, Sendable, Hashable {
    case prepared
    case swapped
    case tooLate = "too-late"
}
