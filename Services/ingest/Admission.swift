import AttributionModel
import Hummingbird
import Logging
import Metrics
import NIOPosix
import PipelineCatalog
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
/// - Queueing: while a write has waited longer than `queueTarget` for a free connection, or a round
///   trip (a write's, or an app key's lookup) has gone on ten times longer (Redis is not keeping up,
///   or stalls, or the link to it is cut), or while even the
///   fastest request of the last 100 ms took longer than that from its body to its writes, or even
///   the least late of ingest's own wake-ups did (a standing queue: ingest's CPU is not keeping up;
///   CoDel's rule, so a burst alone does not count).
/// - Lag: while the verifier is more than `maxLag` events behind on `events`: the backlog read every
///   250 ms by `run()` (the service half of this type), plus the events ingest wrote since that read
///   and those it is writing.
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
        /// The verifier's backlog as last read, and the events written since that read was sent:
        /// between reads ingest knows what it adds itself (those plus the ones in flight), so a flood
        /// cannot overshoot the ceiling by a whole read interval's worth.
        var lag = 0
        var writtenSinceRead = 0
        var buckets: [String: TokenBucket] = [:]
        /// The shortest request seen in the current interval, and whether the last full interval's
        /// shortest was over the target (a standing queue: even the luckiest request waited).
        var intervalStart = ContinuousClock.now
        var shortest: Duration?
        var finished = 0
        /// The least late wake-up of the interval, and how many there were (`sampleLateness`).
        var latest: Duration?
        var wakes = 0
        var lastWake = ContinuousClock.now
        /// When a request last passed `check` (the sampler idles without them).
        var lastRequest = ContinuousClock.now - .seconds(10)
        var standingQueue = false
    }

    /// Requests an interval needs before its shortest says anything: below that rate one slow request
    /// (a pause on a busy machine) is not a queue, and a trickle cannot overload ingest's CPU anyway.
    static let minimumSamples = 16

    /// CoDel's interval: long enough that a burst does not count as a standing queue.
    static let interval = Duration.milliseconds(100)

    let limits: Limits
    let queue: PublishQueue
    /// The registry lookups event requests make before they publish: round trips to Redis too.
    let appKeys: AppKeyOwners
    /// Reads the lag; nil when there is no ceiling.
    let lagConnection: RedisConnection?
    let partitioning: Partitioning
    let clock: @Sendable () -> Milliseconds
    let logger: Logger
    private let state = Mutex(State())
    /// The most buckets kept; full ones are dropped first (they hold nothing a new bucket would not).
    static let maximumBuckets = 100_000

    init(
        limits: Limits, queue: PublishQueue, appKeys: AppKeyOwners, lagConnection: RedisConnection?, partitioning: Partitioning,
        clock: @escaping @Sendable () -> Milliseconds, logger: Logger
    ) {
        self.limits = limits
        self.queue = queue
        self.appKeys = appKeys
        self.lagConnection = limits.maxLag > 0 ? lagConnection : nil
        self.partitioning = partitioning
        self.clock = clock
        self.logger = logger
    }

    /// Before the body is read: refuses when ingest or the pipeline is past its bounds.
    func check() throws(ProblemDetails) {
        let (inFlight, lag) = state.withLock { ($0.inFlight, $0.lag + $0.writtenSinceRead + $0.inFlight) }
        if limits.maxLag > 0, lag > limits.maxLag {
            IngestMetrics.shed(.pipelineLagging)
            throw ProblemDetails(
                .serviceUnavailable, reason: .pipelineLagging,
                detail: "the pipeline is \(lag) events behind (ceiling \(limits.maxLag)); nothing was written, retry later")
        }
        if inFlight >= limits.maxInFlight { throw overloaded("\(inFlight) events are in flight") }
        // Writes waiting for a connection are queueing; a round trip under way is Redis working,
        // unless it has gone on for ten times the target (a stall: failover, a paused server).
        let delays = queue.delays()
        let roundTrip = max(delays.inFlight, appKeys.oldestLookup())
        if delays.queued > limits.queueTarget || roundTrip > limits.queueTarget * 10 {
            throw overloaded("writes are waiting \(Int(max(delays.queued, roundTrip) / .milliseconds(1))) ms for Redis")
        }
        let now = ContinuousClock.now
        let standing = state.withLock { state in
            state.lastRequest = now
            // An interval with no request finished says nothing; the queue delay above covers a stall.
            if now - state.intervalStart >= Self.interval {
                state.standingQueue =
                    (state.finished >= Self.minimumSamples && (state.shortest ?? .zero) > limits.queueTarget)
                    || (state.wakes >= 2 && (state.latest ?? .zero) > limits.queueTarget)
                    // The sampler itself so late it has not woken for a whole interval.
                    || now - state.lastWake > Self.interval + limits.queueTarget
                state.shortest = nil
                state.finished = 0
                state.latest = nil
                state.wakes = 0
                state.intervalStart = now
            }
            return state.standingQueue
        }
        if standing { throw overloaded("a standing queue: for 100 ms nothing waited less than \(limits.queueTarget)") }
    }

    /// How long a taken request took from its body's arrival to its writes being handed over, per
    /// event: decoding plus waiting for a CPU, the CoDel sojourn. Not the body's upload (a slow client
    /// is not ingest's queue), nor Redis's round trip and `WAIT` (covered by the publish delays); a
    /// batch's time is divided by its items, since its own work is not a queue. Nor the wait for a
    /// task before the route runs: counted too, a single 60 ms stall of the machine at half capacity
    /// made a whole interval's minimum exceed the target and shed the next 100 ms of requests.
    func record(_ elapsed: Duration) {
        state.withLock { state in
            state.shortest = min(state.shortest ?? elapsed, elapsed)
            state.finished += 1
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
        state.withLock { state in
            state.inFlight -= count
            // Written, or failed: counted either way until the next read says (too many is the safe side).
            if limits.maxLag > 0 { state.writtenSinceRead += count }
        }
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

    /// While ingest runs: measures how late its own tasks start (every 10 ms), and reads the verifier's
    /// backlog on `events` every 250 ms when there is a lag ceiling.
    func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.sampleLateness() }
                if let connection = self.lagConnection {
                    group.addTask { await self.readLag(on: connection) }
                }
            }
        }
        await lagConnection?.close()
    }

    /// A timer asking to fire in 10 ms fires late by the queue ahead of it: on an event loop, the HTTP
    /// work (parsing, handling, writing answers: the public listener's single-event requests run on
    /// their connection's loop) of every connection it serves; on Swift's thread pool, every other task
    /// queued (batches among them). That lateness is ingest's own queue (requests received, not yet
    /// served), which no request can measure for itself. Each round samples every event loop, and
    /// then the pool, and keeps the worst: one saturated loop delays all of its connections.
    private func sampleLateness() async {
        let period = Duration.milliseconds(10)
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        while !Task.isCancelled {
            // Idle (no request for a second), ingest has no queue to measure: sample rarely, so an idle
            // ingest costs next to nothing.
            let idle = state.withLock { state in
                guard ContinuousClock.now - state.lastRequest > .seconds(1) else { return false }
                // Not overdue while it sleeps on purpose (the rule in `check`).
                state.lastWake = ContinuousClock.now + .milliseconds(250)
                return true
            }
            if idle {
                try? await Task.sleep(for: .milliseconds(250))
                continue
            }
            var worst = Duration.zero
            for loop in loops {
                let asked = ContinuousClock.now
                guard
                    let fired = try? await loop.scheduleTask(in: .milliseconds(10), { ContinuousClock.now }).futureResult
                        .get()
                else { return }
                worst = max(worst, fired - asked - period)
            }
            let asked = ContinuousClock.now
            try? await Task.sleep(for: period)
            worst = max(worst, ContinuousClock.now - asked - period)
            let late = worst
            state.withLock { state in
                state.latest = min(state.latest ?? late, late)
                state.wakes += 1
                state.lastWake = ContinuousClock.now
            }
        }
    }

    private func readLag(on connection: RedisConnection) async {
        let stream = StreamNames.events
        let group = ConsumerGroups.verifier.name
        while !Task.isCancelled {
            do {
                let written = state.withLock { $0.writtenSinceRead }
                let partitions = stream.all(partitioning)
                let replies = try await connection.pipeline(
                    partitions.map { RedisCommand("XINFO", "GROUPS", $0) } + partitions.map(GroupProgress.lastEntryCommand))
                let lag = zip(replies, replies.dropFirst(partitions.count)).reduce(0) { total, pair in
                    // Unread (`lag`, unless the group has the last entry) plus read and unacknowledged
                    // (`pending`); a stream or group not created yet is an error reply, and nothing behind.
                    let info = pair.0.elements.map(\.fieldMap).first { $0["name"]?.string == group }
                    let unread = GroupProgress.unread(
                        lag: info?["lag"]?.int,
                        lastDelivered: info?["last-delivered-id"]?.string.flatMap(StreamTrim.EntryID.init),
                        lastEntry: GroupProgress.lastEntry(pair.1))
                    return total + Int(unread ?? 0) + Int(info?["pending"]?.int ?? 0)
                }
                state.withLock { state in
                    state.lag = lag
                    // Those written before the read was sent are in it.
                    state.writtenSinceRead -= written
                }
            } catch {
                logger.debug("lag unreadable", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }
}

/// ingest's own counters.
enum IngestMetrics {
    /// `ingest_shed_total{reason}`: refusals under overload: a whole request, or a batch item past its rate.
    static func shed(_ reason: ProblemReason) {
        Counter(label: "ingest_shed_total", dimensions: [("reason", reason.rawValue)]).increment()
    }

    /// `ingest_events_total{outcome="accepted"}`, made once: every accepted request counts itself,
    /// and asking the factory for it again costs a locked lookup per request. (First used by a request,
    /// so after the metrics system is bootstrapped.)
    static let accepted = Counter(label: "ingest_events_total", dimensions: [("outcome", "accepted")])

    /// `ingest_events_total{outcome}`: events answered, by `accepted` or the refusal's reason.
    static func answered(_ outcome: String, count: Int = 1) {
        Counter(label: "ingest_events_total", dimensions: [("outcome", outcome)]).increment(by: count)
    }
}

extension Admission {
    /// What ingest's public listener refuses from a request's head alone (`EarlyRefusal`, answered on
    /// the connection's event loop): a request to an event route that `check()` refuses, exactly as the
    /// route would before reading its body. A request the route answers otherwise first (no app key:
    /// 401) goes on to the route.
    func earlyRefusal(_ request: HTTPRequest) -> ProblemDetails? {
        guard request.method == .post, let path = request.path, let kind = EventKind(requestPath: path) else { return nil }
        if kind.needsAppKey, request.headerFields.bearerToken?.isEmpty != false { return nil }
        do {
            try check()
            return nil
        } catch {
            return error
        }
    }
}
