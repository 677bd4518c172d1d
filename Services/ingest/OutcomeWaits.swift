import AttributionModel
import Foundation
import HTTPTypes
import Hummingbird
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import Synchronization

/// `Prefer: wait=N` (RFC 7240) on a re-engagement: the 202 waits up to N seconds (at most 10) for
/// attribution-winner's decision and says whether a conversion was created. The decision is read
/// from the record attribution-winner keeps a minute (`StageKeys.reengagementOutcome`), polled with
/// a growing interval: a conversion settles before it is attributed (`SETTLE_MS`), so the first
/// looks would mostly find nothing. Waiting requests are bounded: past `maxWaiting`, a request is
/// answered at once with `pending`, so that waits cannot hold ingest's connections or Redis.
final class OutcomeWaits: Sendable {
    static let maxSeconds = 10
    static let maxWaiting = 256
    private static let firstInterval = Duration.milliseconds(20)
    private static let longestInterval = Duration.milliseconds(250)

    private let redis: RedisConnection
    private let partitioning: Partitioning
    private let waiting = Atomic<Int>(0)

    init(redis: RedisConnection, partitioning: Partitioning) {
        self.redis = redis
        self.partitioning = partitioning
    }

    /// The seconds a request's `Prefer: wait=N` asks for, at most `maxSeconds`; nil without one (or
    /// with a value that is not a number of seconds: a preference not understood is ignored).
    static func preferredSeconds(_ headers: HTTPFields) -> Int? {
        let preferences = headers[values: .prefer].flatMap { $0.split(separator: ",") }
        for preference in preferences {
            let parts = preference.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, parts[0].lowercased() == "wait", let seconds = Int(parts[1]), seconds >= 0 else { continue }
            return min(seconds, maxSeconds)
        }
        return nil
    }

    /// The decision on the re-engagement tagged `tag` on `device`, nil when none came within `seconds`
    /// (or too many requests wait already).
    func outcome(tag: String, device: String, within seconds: Int) async -> ConversionOutcome? {
        guard seconds > 0 else { return nil }
        guard waiting.add(1, ordering: .relaxed).newValue <= Self.maxWaiting else {
            waiting.subtract(1, ordering: .relaxed)
            return nil
        }
        defer { waiting.subtract(1, ordering: .relaxed) }
        let key = StageKeys.reengagementOutcome(conversionTag: tag, in: partitioning.of(device: device))
        let deadline = ContinuousClock.now + .seconds(seconds)
        var interval = Self.firstInterval
        while true {
            if let text = try? await redis.send(RedisCommand("GET", key)).string,
                let outcome = ConversionOutcome(recorded: text)
            {
                return outcome
            }
            let now = ContinuousClock.now
            guard now < deadline, !Task.isCancelled else { return nil }
            try? await Task.sleep(for: min(interval, deadline - now))
            interval = min(interval * 3 / 2, Self.longestInterval)
        }
    }
}

extension HTTPField.Name {
    static let prefer = Self("Prefer")!
    static let preferenceApplied = Self("Preference-Applied")!
}
