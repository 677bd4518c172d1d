import AttributionModel
import Logging
import Metrics
import RedisStreams
import ServiceLifecycle
import ServiceRuntime
import Synchronization

/// Decides, before the work is done, whether ingest takes a request: past its bounds it answers at
/// once (503 `overloaded` or `pipeline-lagging`, 429 `rate-limited`, each with `Retry-After`) instead
/// of queueing until clients time out, so what it does accept stays fast and the pipeline's backlog
/// stays bounded. Nothing refused was written.
///
/// - In flight: at most `maxInFlight` events parsed and not yet answered.
/// - Queueing: while the oldest unanswered publish has waited longer than `queueTarget`, Redis is
///   not keeping up with what is offered.
/// - Lag: while the verifier is more than `maxLag` events behind on `events` (read every 250 ms by
///   `run()`, the service half of this type).
/// - Per caller: a token bucket per ad network or app (`callerRate`, `callerBurst`).
final class Admission: Service, Sendable {
    struct Limits: Sendable {
        var maxInFlight = 2_000
        var queueTarget = Duration.milliseconds(20)
        /// 0: no lag ceiling.
        var maxLag = 200_000
        /// Events a second per caller; 0: no limit.
        var callerRate = 0
        /// 0: one second of `callerRate`, and at least one full batch.
        var callerBurst = 0

        var burst: Double { Double(callerBurst > 0 ? callerBurst : max(callerRate, BatchBody.maximumItems)) }
    }

    private struct State {
        var inFlight = 0
        var lag = 0
        var buckets: [String: TokenBucket] = [:]
    }

    let limits: Limits
    let queue: PublishQueue
    /// Reads the lag; nil when there is no ceiling.
    let lagConnection: RedisConnection?
    let partitioning: Partitioning
    let clock: @Sendable () -> Milliseconds
    let logger: Logger
    private let state = Mutex(State())
    /// The most buckets kept; full ones are dropped first (they hold nothing a new bucket would not).
    static let maximumBuckets = 100_000

    init(
        limits: Limits, queue: PublishQueue, lagConnection: RedisConnection?, partitioning: Partitioning,
        clock: @escaping @Sendable () -> Milliseconds, logger: Logger
    ) {
        self.limits = limits
        self.queue = queue
        self.lagConnection = limits.maxLag > 0 ? lagConnection : nil
        self.partitioning = partitioning
        self.clock = clock
        self.logger = logger
    }

    /// Before the body is read: refuses when ingest or the pipeline is past its bounds.
    func check() throws(ProblemDetails) {
        let (inFlight, lag) = state.withLock { ($0.inFlight, $0.lag) }
        if limits.maxLag > 0, lag > limits.maxLag {
            IngestMetrics.shed(.pipelineLagging)
            throw ProblemDetails(
                .serviceUnavailable, reason: .pipelineLagging,
                detail: "the pipeline is \(lag) events behind (ceiling \(limits.maxLag)); nothing was written, retry later")
        }
        if inFlight >= limits.maxInFlight { throw overloaded("\(inFlight) events are in flight") }
        let delay = queue.delay()
        if delay > limits.queueTarget {
            throw overloaded("writes are waiting \(delay.milliseconds) ms for Redis")
        }
    }

    /// After parsing: holds `count` events in flight until `release`; refuses past the bound (a batch
    /// larger than the bound still goes when nothing else is in flight).
    func reserve(_ count: Int) throws(ProblemDetails) {
        let taken = state.withLock { state -> Bool in
            guard state.inFlight == 0 || state.inFlight + count <= limits.maxInFlight else { return false }
            state.inFlight += count
            return true
        }
        guard taken else { throw overloaded("\(limits.maxInFlight) events are in flight") }
    }

    func release(_ count: Int) {
        state.withLock { $0.inFlight -= count }
    }

    /// How many of `count` events `caller` may send now (the first ones), and when to try again if not all.
    func take(_ count: Int, caller: String) -> (granted: Int, retryAfter: Milliseconds) {
        guard limits.callerRate > 0 else { return (count, 0) }
        let now = clock()
        return state.withLock { state in
            if state.buckets[caller] == nil, state.buckets.count >= Self.maximumBuckets {
                state.buckets = state.buckets.filter { !$0.value.isFull(now: now) }
                if state.buckets.count >= Self.maximumBuckets { state.buckets.removeAll() }
            }
            var bucket = state.buckets[caller] ?? TokenBucket(rate: Double(limits.callerRate), burst: limits.burst, now: now)
            let granted = bucket.take(count, now: now)
            state.buckets[caller] = bucket
            return (granted, granted < count ? bucket.retryAfter(now: now) : 0)
        }
    }

    /// The 429 for events past a caller's rate.
    static func rateLimited(_ caller: String, retryAfter: Milliseconds, rate: Int) -> ProblemDetails {
        IngestMetrics.shed(.rateLimited)
        return ProblemDetails(
            .tooManyRequests, reason: .rateLimited,
            detail: "\(caller) is past its \(rate) events/s; nothing of this was written, retry after Retry-After seconds",
            retryAfterSeconds: max(1, Int((retryAfter + 999) / 1_000)))
    }

    private func overloaded(_ why: String) -> ProblemDetails {
        IngestMetrics.shed(.overloaded)
        return ProblemDetails(
            .serviceUnavailable, reason: .overloaded, detail: "ingest is at capacity (\(why)); nothing was written, retry later")
    }

    /// Reads the verifier's backlog on `events` every 250 ms while ingest runs.
    func run() async throws {
        guard let connection = lagConnection else { return }
        let stream = StreamNames.events
        let group = ConsumerGroups.verifier.name
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let replies = try await connection.pipeline(
                        stream.all(self.partitioning).map { RedisCommand("XINFO", "GROUPS", $0) })
                    let lag = replies.reduce(0) { total, reply in
                        // Unread (`lag`) plus read and unacknowledged (`pending`); a stream or group not
                        // created yet is an error reply, and nothing behind.
                        let info = reply.elements.map(\.fieldMap).first { $0["name"]?.string == group }
                        return total + Int(info?["lag"]?.int ?? 0) + Int(info?["pending"]?.int ?? 0)
                    }
                    self.state.withLock { $0.lag = lag }
                } catch {
                    self.logger.debug("lag unreadable", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        await connection.close()
    }
}

extension Duration {
    var milliseconds: Int64 { components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000 }
}

/// ingest's own counters.
enum IngestMetrics {
    /// `ingest_shed_total{reason}`: refusals under overload: a whole request, or a batch item past its rate.
    static func shed(_ reason: ProblemReason) {
        Counter(label: "ingest_shed_total", dimensions: [("reason", reason.rawValue)]).increment()
    }

    /// `ingest_events_total{outcome}`: events answered, by `accepted` or the refusal's reason.
    static func answered(_ outcome: String, count: Int = 1) {
        Counter(label: "ingest_events_total", dimensions: [("outcome", outcome)]).increment(by: count)
    }
}
