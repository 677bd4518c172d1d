/// When a failed delivery is tried again: at most 9 retries, all within 9 days of the first attempt,
/// with growing intervals and jitter so a recovered endpoint is not hit by its whole backlog at once.
public enum RetrySchedule {
    public static let maximumRetries = 9
    public static let limit: Duration = .days(9)

    /// Base wait before retry n (1-based). Cumulative: 1 m, 6 m, 36 m, 2.6 h, 8.6 h, 20.6 h,
    /// 44.6 h, 92.6 h, 164.6 h (6.9 days); with up to +20 % jitter the last stays under 8.3 days.
    public static let baseIntervals: [Duration] = [
        .minutes(1), .minutes(5), .minutes(30), .hours(2), .hours(6), .hours(12), .hours(24), .hours(48), .hours(72),
    ]

    /// Delay before the retry that follows `failedAttempts` failures, or nil when retries are exhausted.
    public static func delay(
        afterFailedAttempts failedAttempts: Int, policy: TimePolicy, using generator: inout some RandomNumberGenerator
    ) -> Milliseconds? {
        guard failedAttempts >= 1, failedAttempts <= maximumRetries else { return nil }
        let base = policy.milliseconds(baseIntervals[failedAttempts - 1])
        let jitter = Milliseconds.random(in: 0...max(0, base / 5), using: &generator)
        return base + jitter
    }
}
