/// One postback destination's circuit breaker (a destination is a URL's scheme, host and port), as the
/// dispatcher keeps it per replica: after `failureThreshold` attempts in a row that got no answer (a
/// timeout or a connection error) the circuit opens, and nothing is sent there until a cooldown has
/// passed; then one attempt probes it. A probe answered (with any status) closes the circuit; one that
/// gets no answer opens it again for twice the cooldown, up to `longestCooldown`. Answers of any
/// status never open it: a destination that answers costs nothing to wait for, and its failed answers
/// follow the retry schedule exactly.
///
/// Deliveries that meet an open circuit are not attempted: they wait in the retry queue for the probe
/// without spending one of their 9 retries (`DispatcherStep.deferral`), so a destination that is down
/// for an hour costs its postbacks an hour, not their retries, and costs every other destination nothing.
public struct DestinationCircuit: Sendable, Hashable {
    public enum State: Sendable, Hashable {
        case closed
        /// Nothing is sent before `until`; then one probe.
        case open(until: Milliseconds)
        /// One probe is in flight; everything else waits for its answer.
        case probing
    }

    /// Failed attempts in a row that open the circuit.
    public static let failureThreshold = 5
    /// The first cooldown, in virtual time (scaled by `TIME_SCALE`, like the retry schedule): the first
    /// retry's wait. Never shorter than one delivery timeout, in real time: probing more often than an
    /// attempt can end would only stack probes.
    public static let firstCooldown: Duration = .minutes(1)
    /// Cooldowns double up to this (virtual time).
    public static let longestCooldown: Duration = .hours(1)

    public private(set) var state: State = .closed
    public private(set) var consecutiveFailures = 0
    /// The cooldown the next opening uses (real milliseconds).
    private var cooldown: Milliseconds?

    public init() {}

    /// What an attempt to this destination may do now.
    public enum Admission: Sendable, Hashable {
        /// Send it (a probe, when the circuit was open: its answer decides the circuit).
        case send(probe: Bool)
        /// Do not send; try again at `until` (real milliseconds).
        case wait(until: Milliseconds)
    }

    /// Whether an attempt may go now. `timeout` is the delivery timeout (real ms): a probe in flight
    /// ends within it, so waiting deliveries come back then.
    public mutating func admit(now: Milliseconds, timeout: Milliseconds) -> Admission {
        switch state {
        case .closed:
            return .send(probe: false)
        case .open(let until) where now >= until:
            state = .probing
            return .send(probe: true)
        case .open(let until):
            return .wait(until: until)
        case .probing:
            return .wait(until: now + timeout)
        }
    }

    /// Records how an attempt ended: `failed` when it got no answer (a timeout or a connection error).
    public mutating func record(failed: Bool, now: Milliseconds, policy: TimePolicy, timeout: Milliseconds) {
        guard failed else {
            state = .closed
            consecutiveFailures = 0
            cooldown = nil
            return
        }
        consecutiveFailures += 1
        let first = max(policy.milliseconds(Self.firstCooldown), timeout)
        let longest = max(policy.milliseconds(Self.longestCooldown), first)
        switch state {
        case .probing:
            let next = min((cooldown ?? first) * 2, longest)
            cooldown = next
            state = .open(until: now + next)
        case .closed where consecutiveFailures >= Self.failureThreshold:
            cooldown = first
            state = .open(until: now + first)
        case .closed, .open:
            // An attempt sent before the circuit opened, ending after: the opening stands.
            break
        }
    }

    /// Whether the circuit is open or probing (for metrics and status).
    public var isOpen: Bool { state != .closed }
}

extension DispatcherStep.Response {
    /// What `DestinationCircuit.record(failed:…)` is told: no answer or no connection, the destination
    /// down or hanging (every attempt there holds a permit up to the delivery timeout). An answer of any
    /// status (a 5xx included) shows it up: it costs nothing to wait for, and its failures follow the
    /// retry schedule exactly.
    public var showsTheDestinationDown: Bool {
        if case .transportError = self { return true }
        return false
    }
}
