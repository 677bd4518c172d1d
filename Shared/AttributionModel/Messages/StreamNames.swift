/// The streams and consumer groups of the one linear path (docs/architecture.md draws them).
public enum StreamNames {
    /// ingest → verifier
    public static let events = "events"
    /// verifier → attribution-winner
    public static let verified = "verified"
    /// verifier's refusals, with reason codes
    public static let rejected = "rejected"
    /// attribution-winner's own conversions once their settle time passed, released by its delayed queue
    public static let conversionsSettled = "winner:settled"
    /// attribution-winner → scheduler
    public static let attributions = "attributions"
    /// the scheduler's own window timers, released by its delayed queue
    public static let schedulerTimers = "scheduler:timers"
    /// scheduler (held postbacks, when due) and dispatcher retries → dispatcher
    public static let postbacks = "postbacks"
    /// postbacks that exhausted their retries
    public static let deliveriesDead = "deliveries:dead"
}

/// The delayed queues: a sorted set of due times plus a hash of messages, moved atomically into a stream.
public enum DelayedQueueNames {
    /// conversions waiting out the settle time, released into `winner:settled`
    public static let settlingConversions = "winner:settling"
    /// held postbacks of one window (0, 1, 2), released into `postbacks` when their random delay ends
    public static func heldPostbacks(window: Int) -> String { "scheduler:held:w\(window)" }
    /// window ends, released into `scheduler:timers`
    public static let windowTimers = "scheduler:windows"
    /// failed deliveries, released into `postbacks` when their retry is due
    public static let deliveryRetries = "dispatcher:retries"
}
