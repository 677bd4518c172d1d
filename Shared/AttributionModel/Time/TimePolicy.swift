/// Milliseconds since 1970: the one time unit every message and rule uses (impressions carry ms too).
public typealias Milliseconds = Int64

/// Every duration in the rules goes through this one value, so the same binaries can play a 35-day
/// lifecycle in seconds: a duration is divided by `scale` (1 = real time).
public struct TimePolicy: Sendable, Equatable, Codable {
    public let scale: Double

    public init(scale: Double = 1) {
        precondition(scale > 0 && scale.isFinite, "time scale must be a positive number")
        self.scale = scale
    }

    /// The scaled length, in milliseconds, of a real-world duration.
    public func milliseconds(_ duration: Duration) -> Milliseconds {
        let (seconds, attoseconds) = duration.components
        let real = Double(seconds) * 1000 + Double(attoseconds) / 1e15
        return Milliseconds((real / scale).rounded())
    }

    public static let realTime = TimePolicy(scale: 1)
}

extension Duration {
    public static func minutes(_ m: Int64) -> Duration { .seconds(m * 60) }
    public static func hours(_ h: Int64) -> Duration { .seconds(h * 3600) }
    public static func days(_ d: Int64) -> Duration { .seconds(d * 86_400) }
}
