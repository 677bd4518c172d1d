/// What one device and advertised app can make attribution-winner keep, and for how long
/// (docs/concepts/attribution-rules.md, `device-state-bounded`). Every write prunes the
/// state by age as of the processing time, so an active device's state no longer grows with its
/// history; the counts bound what an app's reports can add.
public enum DeviceStateLimits {
    /// A click can still win an install for 30 days (the longest click window an app may set), a view
    /// for 7; `inFlight` more covers events still on their way through the pipeline.
    public static let clickWindow = Duration.days(30)
    public static let viewWindow = Duration.days(7)
    /// A conversion routes updates for its windows (35 days), then `inFlight` twice; that is longer
    /// than the app's re-engagement cap period (30 days) and the longest cooldown (720 h), which read it.
    public static let conversionWindows = Duration.days(35)
    /// Updates and activity reports waiting for their conversion, per device and app; past that a new
    /// one is refused `pending-limit`.
    public static let pendingUpdates = 100
    public static let pendingActivities = 100

    /// The margin for events still in the pipeline: a scaled day, but never less than 5 minutes of
    /// wall clock (delays from retries, claims and restarts do not shrink with `TIME_SCALE`).
    public static func inFlight(_ policy: TimePolicy) -> Milliseconds { max(policy.milliseconds(.days(1)), 300_000) }

    public static func clicksKept(_ policy: TimePolicy) -> Milliseconds {
        policy.milliseconds(clickWindow) + inFlight(policy)
    }
    public static func viewsKept(_ policy: TimePolicy) -> Milliseconds { policy.milliseconds(viewWindow) + inFlight(policy) }
    public static func conversionsKept(_ policy: TimePolicy) -> Milliseconds {
        policy.milliseconds(conversionWindows) + 2 * inFlight(policy)
    }
    /// An update or activity report waits this long (after its own time) for its conversion: the
    /// pipeline reorders events by seconds or minutes, not days. Then it is refused `conversion-not-found`.
    public static func pendingKept(_ policy: TimePolicy) -> Milliseconds { 2 * inFlight(policy) }
}

extension DeviceAttributionState {
    /// What `prune` removed that was waiting for a conversion: each is refused, so it is accounted for.
    public struct Expired: Sendable, Hashable {
        public var updates: [ValueUpdateReport] = []
        public var activities: [ActivityReport] = []
    }

    /// Drops, as of `now`, impressions no attribution window can reach, conversions whose windows have
    /// ended, settling records long attributed, and updates and activity that waited too long for their
    /// conversion (returned, to be refused).
    public mutating func prune(now: Milliseconds, policy: TimePolicy) -> Expired {
        let clicksSince = now - DeviceStateLimits.clicksKept(policy)
        let viewsSince = now - DeviceStateLimits.viewsKept(policy)
        impressions.removeAll { impression in
            impression.interaction.time < (impression.interaction.type == .click ? clicksSince : viewsSince)
        }
        let conversionsSince = now - DeviceStateLimits.conversionsKept(policy)
        conversions.removeAll { $0.time < conversionsSince }
        let pendingSince = now - DeviceStateLimits.pendingKept(policy)
        settling.removeAll { $0.time < pendingSince }
        var expired = Expired()
        expired.updates = pendingUpdates.filter { $0.time < pendingSince }
        pendingUpdates.removeAll { $0.time < pendingSince }
        expired.activities = pendingActivities.filter { $0.time < pendingSince }
        pendingActivities.removeAll { $0.time < pendingSince }
        return expired
    }

    /// Whether a report that finds no conversion yet may wait for one: false past the limits.
    public func canKeepPending(update: Bool) -> Bool {
        update
            ? pendingUpdates.count < DeviceStateLimits.pendingUpdates
            : pendingActivities.count < DeviceStateLimits.pendingActivities
    }
}
