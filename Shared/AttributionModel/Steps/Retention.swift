/// How long each piece of state is kept (scaled by the time policy): the one place the stages'
/// expiry times are decided.
public enum Retention {
    /// attribution-winner's device state: an impression (30 days) could still lead to a conversion
    /// whose windows (35 days) run.
    public static func deviceState(_ policy: TimePolicy) -> Milliseconds { policy.milliseconds(.days(66)) }
    /// Until when a postback plan is kept (an absolute time, so a plan's writes do not push it back): its
    /// last window's end plus that window's shortest postback delay, while a value stamped in time but
    /// late through the pipeline could still prepare a postback that is not yet due, or its last held
    /// postback's release if later (a late update may swap it until it leaves).
    public static func plan(_ plan: PostbackPlan, policy: TimePolicy) -> Milliseconds {
        let last = ConversionWindows.count - 1
        let development = plan.attribution.isDevelopment
        let end = plan.windowEnds(policy: policy)[last].at
        let settled = end + policy.milliseconds(PostbackDelay.range(sequenceIndex: last, development: development).lowerBound)
        return max(settled, plan.lastDueAt ?? settled)
    }
    /// A finished plan's marker: as long as attribution-winner may still route updates to the
    /// conversion, so late updates are ignored rather than retried.
    public static func finishedMarker(_ policy: TimePolicy) -> Milliseconds { policy.milliseconds(.days(66)) }
    /// Replay markers and recent views: as long as an impression could still be fresh.
    public static func impressionFreshness(_ policy: TimePolicy) -> Milliseconds {
        policy.milliseconds(ImpressionRules.maximumAge) + TimePolicy.realTime.milliseconds(ImpressionRules.futureTolerance)
    }
    /// A device's re-engagement history: the device cap's period.
    public static func reengagements(_ policy: TimePolicy) -> Milliseconds {
        policy.milliseconds(ConversionEligibility.deviceCap.period)
    }
    /// A refusal log (the last 100 refusals of a network or app): 30 days, wall clock.
    public static let rejectionLog: Milliseconds = 30 * 86_400_000
    /// ingest's first answer to an `Idempotency-Key`: 24 hours, wall clock (the promise of docs/reference/http-api.md).
    public static let idempotency: Milliseconds = 24 * 3_600_000
}
