import AttributionModel
import Foundation
import Logging
import RedisStreams
import ServiceRuntime
import Synchronization

/// Attempts still under way when their batch is written. The batch does not wait for a slow
/// destination: it keeps an in-flight record of each such delivery in the retry queue (due when the
/// attempt must have ended, `DestinationLanes.longestAttempt`), acknowledges its input, and goes on.
/// Once the batch committed and the attempt ended, its outcome replaces the record in one script, only
/// if the record is still the one the batch wrote. If the dispatcher stops first, the record comes due
/// and counts as a failed attempt (`DispatcherStep.lostAttempt`): nothing is lost, and the postback is
/// sent again on the retry schedule.
struct LateOutcomes: Sendable {
    let connection: RedisConnection
    let logger: Logger
    /// The late attempts not finished yet, which a stopping dispatcher waits for.
    let pending = PendingCount()

    /// What one late attempt's outcome does to its in-flight record.
    enum Replacement: Sendable {
        case delivered
        /// `deferred`: held back by its destination's lane, not attempted.
        case retry(DeliveryRetry, at: Milliseconds, deferred: Bool)
        case dead(DeliveryRetry, reason: String)
    }

    /// Replaces the in-flight record `id` (scheduled at `leaseDue` in `partition`'s retry queue) by the
    /// attempt's outcome; a record released or replaced meanwhile is left alone. Retried while the
    /// lease lasts if Redis does not answer.
    func write(_ replacement: Replacement, id: String, leaseDue: Milliseconds, in partition: Partition) async -> Bool {
        let queue = DelayedQueues.deliveryRetries(partition)
        var arguments: [[UInt8]] = [Array(id.utf8), Array(String(leaseDue).utf8)]
        switch replacement {
        case .delivered:
            arguments += [Array("delivered".utf8)]
        case .retry(let retry, let due, let deferred):
            let message = Envelope(id: retry.deliveryIdentifier, time: due, body: .deliveryRetry(retry)).encoded()
            let stat = deferred ? "deferred" : "failed-attempts"
            arguments += [Array(stat.utf8), Array("retry".utf8), Array(String(due).utf8), message]
        case .dead(let retry, let reason):
            arguments += [Array("dead-lettered".utf8), Array("dead".utf8)]
            arguments += DispatcherStage.deadLetterFields(retry, reason: reason).map { Array($0.utf8) }
        }
        let keys = [queue.dueKey, queue.itemsKey, StageKeys.dispatcherStats(partition), StreamNames.deliveriesDead(partition)]
        while WallClock.nowMilliseconds() < leaseDue {
            do {
                return try await Self.script.run(keys: keys, arguments: arguments, on: connection).int == 1
            } catch {
                logger.warning(
                    "cannot write a late delivery outcome, retrying", metadata: ["error": "\(error)", "delivery": "\(id)"])
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
        return false
    }

    /// KEYS: the retry queue's due set and items hash, the stats hash, the dead-letter stream.
    /// ARGV: id, the in-flight record's due time, the stats field, then `retry` due message, or `dead`
    /// and the dead letter's fields.
    static let script = RedisScript(
        """
        local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
        if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
        if ARGV[4] == 'retry' then
          redis.call('ZADD', KEYS[1], ARGV[5], ARGV[1])
          redis.call('HSET', KEYS[2], ARGV[1], ARGV[6])
        else
          redis.call('ZREM', KEYS[1], ARGV[1])
          redis.call('HDEL', KEYS[2], ARGV[1])
          if ARGV[4] == 'dead' then redis.call('XADD', KEYS[4], '*', unpack(ARGV, 5)) end
        end
        redis.call('HINCRBY', KEYS[3], ARGV[3], 1)
        return 1
        """)
}

/// How many late attempts are under way, and a wait until none is: a dispatcher stopped with SIGTERM
/// lets them finish and write their outcomes (within the delivery timeout) before it closes its
/// connections, so a rolling restart neither repeats nor delays their postbacks.
final class PendingCount: Sendable {
    private let state = Mutex<(count: Int, waiters: [UUID: CheckedContinuation<Void, Never>])>((0, [:]))

    func begin() { state.withLock { $0.count += 1 } }

    func end() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count -= 1
            guard state.count == 0 else { return [] }
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once none is under way, or after `timeout`.
    func drain(within timeout: Duration) async {
        let id = UUID()
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state in
                if state.count == 0 { return true }
                state.waiters[id] = continuation
                return false
            }
            if idle { return continuation.resume() }
            Task {
                try? await Task.sleep(for: timeout)
                state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
            }
        }
    }
}

/// Opened when a batch's transaction committed: an in-flight record exists only then, so a late
/// outcome waits for it (a batch that never commits is read again and its deliveries sent again).
final class CommitGate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [UUID: CheckedContinuation<Bool, Never>])>((false, [:]))

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [:] }
            return state.waiters
        }
        for waiter in waiters.values { waiter.resume(returning: true) }
    }

    /// True once opened; false if `timeout` passes first.
    func wait(timeout: Duration) async -> Bool {
        let id = UUID()
        return await withCheckedContinuation { continuation in
            let openAlready = state.withLock { state in
                if state.open { return true }
                state.waiters[id] = continuation
                return false
            }
            if openAlready { return continuation.resume(returning: true) }
            Task {
                try? await Task.sleep(for: timeout)
                state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: false)
            }
        }
    }
}

/// The answers of a batch's attempts as they come, and a wait for them bounded by a deadline. An
/// attempt to a slow destination is released: the wait does not count it (its answer is still taken
/// if it comes first).
final class BatchAnswers: Sendable {
    private struct State {
        var answers: [PostbackDelivery.Answer?]
        /// Attempts still counted by the wait: neither answered nor released.
        var counted: [Bool]
        var remaining: Int
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(
            State(answers: Array(repeating: nil, count: count), counted: Array(repeating: true, count: count), remaining: count))
    }

    func set(_ index: Int, _ answer: PostbackDelivery.Answer) {
        update(index) { $0.answers[index] = answer }
    }

    /// Stops counting attempt `index`: its destination is slow.
    func release(_ index: Int) {
        update(index) { _ in }
    }

    private func update(_ index: Int, _ change: (inout State) -> Void) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            change(&state)
            guard state.counted[index] else { return nil }
            state.counted[index] = false
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// The answers so far once every counted attempt answered or `timeout` passed (nil: still under way).
    func collect(within timeout: Duration) async -> [PostbackDelivery.Answer?] {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                if state.remaining == 0 { return true }
                state.waiter = continuation
                return false
            }
            if done { return continuation.resume() }
            Task {
                try? await Task.sleep(for: timeout)
                state.withLock { state in
                    defer { state.waiter = nil }
                    return state.waiter
                }?.resume()
            }
        }
        return state.withLock { $0.answers }
    }
}
