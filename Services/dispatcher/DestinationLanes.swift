import AttributionModel
import Metrics
import Synchronization

/// Per destination (a postback URL's scheme, host and port), per dispatcher replica: at most `limit`
/// attempts in flight, at most `queueLimit` more waiting for one of them, and the destination's circuit
/// breaker (`DestinationCircuit`). An attempt that finds its destination's circuit open, or its queue
/// full, is not made: the batch writes it back to the retry queue for later, so a slow or dead
/// destination holds only its own postbacks, never a batch or another destination.
actor DestinationLanes {
    let limit: Int
    let queueLimit: Int
    /// The delivery timeout (real ms): how long a probe or a queue's head can take.
    let timeout: Milliseconds
    let policy: TimePolicy
    let clock: @Sendable () -> Milliseconds

    private struct Lane {
        var circuit = DestinationCircuit()
        var inFlight = 0
        /// Resumed with true when a permit passes to it, false when the circuit opened meanwhile.
        var waiting: [CheckedContinuation<Bool, Never>] = []
        /// When each attempt in flight started, by ticket.
        var started: [Int: Milliseconds] = [:]
        /// How long attempts took lately (exponentially weighted, a timeout counting as the timeout).
        var latency: Milliseconds = 0
    }
    private var lanes: [String: Lane] = [:]
    private var nextTicket = 0

    init(limit: Int, timeout: Milliseconds, policy: TimePolicy, clock: @escaping @Sendable () -> Milliseconds) {
        self.limit = max(1, limit)
        self.queueLimit = 16 * self.limit
        self.timeout = timeout
        self.policy = policy
        self.clock = clock
    }

    /// How long an attempt under way now can still take: the longest queue ahead of it drained `limit`
    /// at a time, then its own attempt, with a margin for DNS. An in-flight record is due then.
    func lease() -> Milliseconds {
        let longestQueue = lanes.values.map(\.waiting.count).max() ?? 0
        return Milliseconds(1 + (longestQueue + limit - 1) / limit) * timeout + 5_000
    }

    /// Whether attempts to `destination` take longer than `threshold` (ms): lately on average, or one
    /// in flight now. A batch does not wait for such a destination's answers.
    func isSlow(_ destination: String, threshold: Milliseconds) -> Bool {
        guard let lane = lanes[destination] else { return false }
        let now = clock()
        return lane.latency > threshold || lane.started.values.contains { now - $0 > threshold }
    }

    enum Entry: Sendable {
        /// An attempt may go; `ticket` is handed back to `leave`.
        case permit(ticket: Int)
        /// Not attempted now: try again at `until` (real ms), for `reason`.
        case wait(until: Milliseconds, reason: String)
    }

    /// A permit for one attempt to `destination`, waiting in its queue if every permit is taken.
    func enter(_ destination: String) async -> Entry {
        var lane = lanes[destination] ?? Lane()
        let now = clock()
        if case .wait(let until) = lane.circuit.admit(now: now, timeout: timeout) {
            lanes[destination] = lane
            Counter(label: "dispatcher_destination_deferred_total", dimensions: [("destination", destination)]).increment()
            return .wait(until: until, reason: "circuit open for \(destination)")
        }
        if lane.inFlight < limit {
            lane.inFlight += 1
            lanes[destination] = lane
            publish(destination, lane)
            return .permit(ticket: start(destination))
        }
        guard lane.waiting.count < queueLimit else {
            lanes[destination] = lane
            Counter(label: "dispatcher_destination_deferred_total", dimensions: [("destination", destination)]).increment()
            return .wait(
                until: now + busyWait(lane, now: now),
                reason: "\(destination) busy: \(limit) attempts in flight, \(queueLimit) waiting")
        }
        lanes[destination] = lane
        let permitted = await withCheckedContinuation {
            lanes[destination, default: Lane()].waiting.append($0)
            publish(destination, lanes[destination] ?? Lane())
        }
        publish(destination, lanes[destination] ?? Lane())
        if permitted { return .permit(ticket: start(destination)) }
        Counter(label: "dispatcher_destination_deferred_total", dimensions: [("destination", destination)]).increment()
        let until: Milliseconds =
            if case .open(let until) = lanes[destination]?.circuit.state { until } else { clock() + timeout }
        return .wait(until: until, reason: "circuit open for \(destination)")
    }

    /// How long a delivery that found the queue full waits before it comes back: about the time the
    /// queue ahead of it takes to drain at the destination's pace, at least 50 ms, at most one delivery
    /// timeout. The pace is the recent attempts' average, or the oldest attempt still under way if that
    /// is longer (a hanging destination has no finished attempt to average yet). A fast destination
    /// offered a large batch then takes the rest a moment later (a fixed timeout held a healthy receiver
    /// to a few hundred deliveries a second); a slow one keeps its postbacks out of the way as before.
    private func busyWait(_ lane: Lane, now: Milliseconds) -> Milliseconds {
        let rounds = Milliseconds((queueLimit + limit - 1) / limit + 1)
        let oldest = lane.started.values.min().map { now - $0 } ?? 0
        return min(timeout, max(50, rounds * max(lane.latency, oldest)))
    }

    /// Ends an attempt that held a permit: `failed` (no answer: a timeout or a connection error) feeds
    /// the circuit; the permit passes to the next waiting attempt, or, if the circuit just opened, every
    /// waiting attempt is turned away to wait for the probe.
    func leave(_ destination: String, ticket: Int, failed: Bool) {
        guard var lane = lanes[destination] else { return }
        let now = clock()
        if let started = lane.started.removeValue(forKey: ticket) {
            lane.latency = (3 * lane.latency + (now - started)) / 4
        }
        lane.circuit.record(failed: failed, now: now, policy: policy, timeout: timeout)
        if failed {
            Counter(label: "dispatcher_destination_failures_total", dimensions: [("destination", destination)]).increment()
        }
        if lane.circuit.isOpen {
            for waiter in lane.waiting { waiter.resume(returning: false) }
            lane.waiting = []
        }
        if !lane.waiting.isEmpty {
            lane.waiting.removeFirst().resume(returning: true)  // the permit passes straight on
        } else {
            lane.inFlight -= 1
        }
        lanes[destination] = lane
        publish(destination, lane)
    }

    /// Destinations whose circuit is open or probing, with when the next probe may go (nil: under way).
    func openCircuits() -> [(destination: String, probeAt: Milliseconds?, failures: Int)] {
        lanes.compactMap { destination, lane in
            switch lane.circuit.state {
            case .closed: nil
            case .open(let until): (destination, until, lane.circuit.consecutiveFailures)
            case .probing: (destination, nil, lane.circuit.consecutiveFailures)
            }
        }.sorted { $0.destination < $1.destination }
    }

    private func start(_ destination: String) -> Int {
        nextTicket += 1
        lanes[destination, default: Lane()].started[nextTicket] = clock()
        return nextTicket
    }

    private func publish(_ destination: String, _ lane: Lane) {
        let dimensions = [("destination", destination)]
        Gauge(label: "dispatcher_destination_in_flight", dimensions: dimensions).record(lane.inFlight)
        Gauge(label: "dispatcher_destination_waiting", dimensions: dimensions).record(lane.waiting.count)
        Gauge(label: "dispatcher_destination_circuit_open", dimensions: dimensions).record(lane.circuit.isOpen ? 1 : 0)
    }
}
