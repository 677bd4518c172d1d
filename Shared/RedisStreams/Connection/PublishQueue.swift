import NIOCore
import NIOPosix
import Synchronization

/// Coalesces the publishes of concurrent requests into pipelined round trips over a small pool of
/// connections. A request that finds a connection idle and nothing waiting makes its round trip itself;
/// one that finds every connection busy waits, and the next free connection takes everything waiting
/// (up to `maximumWrites`) in one pipeline. So a single-event request costs a share of a round trip
/// under load, and one round trip when idle: no timer, no added latency.
///
/// On one server the connections are `EventLoopRedisConnection`s spread over the HTTP server's loops,
/// and a request prefers its own loop's: its round trip then wakes no other thread. On Redis Cluster
/// they are `RedisConnection`s (slot routing, redirections), each with its own thread.
///
/// With `replicas` > 0 each round trip ends in `WAIT` (on Redis Cluster one after each group's
/// writes, since `WAIT` covers the writes made before it on the same node and connection); every write
/// reports what its `WAIT` answered.
public final class PublishQueue: Sendable {
    public struct Write: Sendable {
        enum Operation: Sendable {
            /// The queue's script with these keys and arguments.
            case script(RedisScript.Call)
            /// A write that needs no script (ingest: an event without an `Idempotency-Key` is one XADD,
            /// which costs Redis about a third of a script call).
            case command(RedisCommand)
        }

        let operation: Operation
        /// The writes of one group share one hash slot (ingest: the partition's index): on a cluster
        /// each group gets its own `WAIT`.
        public var group: Int

        public init(call: RedisScript.Call, group: Int) {
            self.operation = .script(call)
            self.group = group
        }

        public init(command: RedisCommand, group: Int) {
            self.operation = .command(command)
            self.group = group
        }

        var isScript: Bool {
            if case .script = operation { return true }
            return false
        }

        /// EVALSHA with `sha`, EVAL with the source when `sha` is nil; the command itself otherwise.
        func redisCommand(_ script: RedisScript, sha: String?) -> RedisCommand {
            switch operation {
            case .script(let call): script.command(for: call, sha: sha)
            case .command(let command): command
            }
        }
    }

    public struct Outcome: Sendable {
        /// The script's reply, or its error reply.
        public var reply: RedisReply
        /// Replicas that confirmed it (`WAIT`'s answer); nil when nothing waited.
        public var replicas: Int?
    }

    /// A connection the queue makes its round trips on.
    public enum Link: Sendable {
        /// A connection with its own thread (every kind of deployment, Redis Cluster included).
        case thread(RedisConnection)
        /// A connection driven by an event loop (one server): no thread hand-off for a caller on that loop.
        case eventLoop(EventLoopRedisConnection)

        var eventLoop: (any EventLoop)? {
            if case .eventLoop(let connection) = self { return connection.eventLoop }
            return nil
        }

        func pipeline(_ commands: [RedisCommand]) async throws -> [RedisReply] {
            switch self {
            case .thread(let connection): try await connection.pipeline(commands)
            case .eventLoop(let connection): try await connection.pipeline(commands)
            }
        }
    }

    private struct Pending {
        let writes: [Write]
        let since: ContinuousClock.Instant
        let continuation: CheckedContinuation<[Outcome], any Error>
    }

    private struct State {
        var pending: [Pending] = []
        var idle: [Link]
        /// When the oldest request of each round trip under way was queued, by round trip.
        var inFlightSince: [Int: ContinuousClock.Instant] = [:]
        var nextRoundTrip = 0

        /// An idle connection, one on `loop` if there is one (its round trip then needs no hop).
        mutating func takeIdle(preferring loop: (any EventLoop)?) -> Link? {
            if let loop, let index = idle.lastIndex(where: { $0.eventLoop === loop }) { return idle.remove(at: index) }
            return idle.popLast()
        }

        mutating func startRoundTrip(since: ContinuousClock.Instant) -> Int {
            let id = nextRoundTrip
            nextRoundTrip += 1
            inFlightSince[id] = since
            return id
        }
    }

    public let script: RedisScript
    public let replicas: Int
    public let waitMilliseconds: Int64
    /// Whether one `WAIT` covers a whole round trip (one server), or each group needs its own (cluster).
    public let oneNode: Bool
    public let maximumWrites: Int
    private let state: Mutex<State>
    private let roundTripCount = Atomic<Int>(0)

    /// Round trips made so far (fewer than the requests served, under load).
    public var roundTrips: Int { roundTripCount.load(ordering: .relaxed) }

    /// A queue over connections with their own threads (`RedisConnection`: one server or a cluster).
    public convenience init(
        script: RedisScript, connections: [RedisConnection], replicas: Int, waitMilliseconds: Int64, oneNode: Bool,
        maximumWrites: Int = 2_000
    ) {
        self.init(
            script: script, links: connections.map(Link.thread), replicas: replicas, waitMilliseconds: waitMilliseconds,
            oneNode: oneNode, maximumWrites: maximumWrites)
    }

    /// A queue over event-loop connections to one server: spread them over the loops that publish.
    public convenience init(
        script: RedisScript, connections: [EventLoopRedisConnection], replicas: Int, waitMilliseconds: Int64,
        maximumWrites: Int = 2_000
    ) {
        self.init(
            script: script, links: connections.map(Link.eventLoop), replicas: replicas, waitMilliseconds: waitMilliseconds,
            oneNode: true, maximumWrites: maximumWrites)
    }

    private init(
        script: RedisScript, links: [Link], replicas: Int, waitMilliseconds: Int64, oneNode: Bool, maximumWrites: Int
    ) {
        precondition(!links.isEmpty)
        self.script = script
        self.replicas = replicas
        self.waitMilliseconds = waitMilliseconds
        self.oneNode = oneNode
        self.maximumWrites = maximumWrites
        self.state = Mutex(State(idle: links))
    }

    /// Writes `writes`; one outcome each, in order. Throws when the round trip itself failed (Redis
    /// unreachable): then nothing is known of these writes, and a retry with the same keys is safe.
    public func publish(_ writes: [Write]) async throws -> [Outcome] {
        guard !writes.isEmpty else { return [] }
        let loop = MultiThreadedEventLoopGroup.currentEventLoop
        // Nothing waiting and a connection idle: this request's own task makes the round trip (on its
        // own loop's connection if one is idle: then no thread is woken at all).
        let now = ContinuousClock.now
        let own = state.withLock { state -> (Link, Int)? in
            guard state.pending.isEmpty, let link = state.takeIdle(preferring: loop) else { return nil }
            return (link, state.startRoundTrip(since: now))
        }
        if let (link, id) = own {
            let result: Result<[Outcome], any Error>
            do {
                result = .success(try await roundTrip(writes, on: link))
            } catch {
                result = .failure(error)
            }
            finished(id, on: link)
            return try result.get()
        }
        return try await withCheckedThrowingContinuation { continuation in
            let link = state.withLock { state -> Link? in
                state.pending.append(Pending(writes: writes, since: now, continuation: continuation))
                return state.takeIdle(preferring: loop)
            }
            if let link { drain(on: link) }
        }
    }

    /// How long writes have waited: the oldest not yet sent (every connection busy), and the oldest
    /// round trip under way (whose age includes Redis's own work on a large pipeline). Zero when idle.
    public func delays(now: ContinuousClock.Instant = .now) -> (queued: Duration, inFlight: Duration) {
        state.withLock { state in
            (
                state.pending.first.map { now - $0.since } ?? .zero,
                state.inFlightSince.values.min().map { now - $0 } ?? .zero
            )
        }
    }

    /// Round trip `id` on `link` is answered: the link serves what waits, or is idle again.
    private func finished(_ id: Int, on link: Link) {
        let more = state.withLock { state -> Bool in
            state.inFlightSince.removeValue(forKey: id)
            guard !state.pending.isEmpty else {
                state.idle.append(link)
                return false
            }
            return true
        }
        if more { drain(on: link) }
    }

    /// Runs round trips on `link` until nothing waits, then gives it back: in a task of its own, on the
    /// link's loop (or the caller's), so the requests it answers resume without a hop.
    private func drain(on link: Link) {
        let loop = link.eventLoop ?? MultiThreadedEventLoopGroup.currentEventLoop
        let executor = loop.map { EventLoopTaskExecutor($0) }
        Task(executorPreference: executor) {
            while true {
                let taken = self.state.withLock { state -> (Int, [Pending])? in
                    guard !state.pending.isEmpty else {
                        state.idle.append(link)
                        return nil
                    }
                    var count = 0
                    var end = 0
                    while end < state.pending.count,
                        end == 0 || count + state.pending[end].writes.count <= self.maximumWrites
                    {
                        count += state.pending[end].writes.count
                        end += 1
                    }
                    let taken = Array(state.pending[..<end])
                    state.pending.removeFirst(end)
                    return (state.startRoundTrip(since: taken[0].since), taken)
                }
                guard let (id, requests) = taken else { return }
                let result: Result<[Outcome], any Error>
                do {
                    result = .success(try await self.roundTrip(requests.flatMap(\.writes), on: link))
                } catch {
                    result = .failure(error)
                }
                // No longer waiting before anyone is told: the answer and the delay signal agree.
                _ = self.state.withLock { $0.inFlightSince.removeValue(forKey: id) }
                switch result {
                case .success(let all):
                    var outcomes = all[...]
                    for request in requests {
                        request.continuation.resume(returning: Array(outcomes.prefix(request.writes.count)))
                        outcomes = outcomes.dropFirst(request.writes.count)
                    }
                case .failure(let error):
                    for request in requests { request.continuation.resume(throwing: error) }
                }
            }
        }
    }

    /// One pipeline (per node) for `writes`; those a node had no script for are sent again with the source
    /// (after the round trip's plain commands, which already ran: a server that lost its scripts can put
    /// a keyed event after an unkeyed one of the same round trip, an order no two requests had anyway).
    private func roundTrip(_ writes: [Write], on link: Link) async throws -> [Outcome] {
        roundTripCount.add(1, ordering: .relaxed)
        let sha = writes.contains(where: \.isScript) ? try await script.loaded(via: link.pipeline) : nil
        var outcomes = try await run(writes, sha: sha, on: link)
        let missing = outcomes.indices.filter {
            writes[$0].isScript && outcomes[$0].reply.errorMessage?.hasPrefix("NOSCRIPT") == true
        }
        if !missing.isEmpty {
            let retried = try await run(missing.map { writes[$0] }, sha: nil, on: link)
            for (index, outcome) in zip(missing, retried) { outcomes[index] = outcome }
        }
        return outcomes
    }

    private func run(_ writes: [Write], sha: String?, on link: Link) async throws -> [Outcome] {
        guard replicas > 0 else {
            return try await link.pipeline(writes.map { $0.redisCommand(script, sha: sha) }).map {
                Outcome(reply: $0, replicas: nil)
            }
        }
        // Groups of writes each followed by one WAIT: the whole round trip on one server, else per group.
        var groups: [[Int]] = []
        if oneNode {
            groups = [Array(writes.indices)]
        } else {
            var byGroup: [Int: Int] = [:]
            for index in writes.indices {
                if let group = byGroup[writes[index].group] {
                    groups[group].append(index)
                } else {
                    byGroup[writes[index].group] = groups.count
                    groups.append([index])
                }
            }
        }
        let wait = RedisCommand("WAIT", String(replicas), String(waitMilliseconds))
        let replies = try await link.pipeline(
            groups.flatMap { group in group.map { writes[$0].redisCommand(script, sha: sha) } + [wait] })
        var outcomes = [Outcome?](repeating: nil, count: writes.count)
        var position = 0
        for group in groups {
            let confirmed = replies[position + group.count].int.map { Int($0) } ?? 0
            for (offset, index) in group.enumerated() {
                outcomes[index] = Outcome(reply: replies[position + offset], replicas: confirmed)
            }
            position += group.count + 1
        }
        return outcomes.map { $0! }
    }
}
